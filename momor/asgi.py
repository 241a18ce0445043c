"""ASGI entry point: Django over HTTP, Channels consumers over websockets."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "momor.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402 - Django must be set up first

application = ProtocolTypeRouter({"http": django_asgi_app})
