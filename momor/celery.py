"""The Celery application; a broker exists only when REDIS_URL is set."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")

app = Celery("momor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
