"""Django's `changepassword`, audited: the password reads "changed", never its value."""

from __future__ import annotations

import getpass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.management.commands import changepassword

from audit.actors import Actor
from audit.trail import audited


class Command(changepassword.Command):
    def handle(self, *args: Any, **options: Any) -> str:
        users = get_user_model()._default_manager.using(options["database"])
        name = options["username"] or getpass.getuser()
        user = users.filter(**{get_user_model().USERNAME_FIELD: name}).first()
        with audited(Actor.command("changepassword"), "change_password", user):
            return str(super().handle(*args, **options))
