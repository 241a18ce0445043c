"""Check every organization's alert rules now and try each delivery that is due, here (the
loop of each Celery worker does both on its own; this is for a one-off check or cron)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from alerts.delivery import dispatch_due
from alerts.firing import check_all
from alerts.loop import here


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        fired = check_all()
        tried = dispatch_due(here)
        self.stdout.write(f"{len(fired)} alert(s) fired, {tried} delivery try(-ies) made")
