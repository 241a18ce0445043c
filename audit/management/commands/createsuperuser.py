"""Django's `createsuperuser`, audited: the operator's account it makes, its password read as
"changed"."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.management.commands import createsuperuser

from audit.actors import Actor
from audit.trail import audited


class Command(createsuperuser.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()._default_manager.using(options["database"])
        newest = users.order_by("-pk").values_list("pk", flat=True).first() or 0
        with audited(Actor.command("createsuperuser"), "create") as change:
            super().handle(*args, **options)
            change.obj = users.filter(pk__gt=newest).order_by("pk").first()
