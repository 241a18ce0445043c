"""Who makes a change: a member (in the UI or on a management API session), a management key,
an operator in the admin, or an operator's command."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Any

from audit.models import ActorKind


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    label: str
    user_id: int | None = None
    key_id: int | None = None

    @classmethod
    def member(cls, user: Any) -> Actor:
        return cls(ActorKind.USER, user.get_username(), user_id=user.pk)

    @classmethod
    def key(cls, key_id: int, prefix: str, creator_id: int | None) -> Actor:
        """A management key: the change is the key's, made for its creator (if any)."""
        return cls(ActorKind.KEY, f"{prefix}…", user_id=creator_id, key_id=key_id)

    @classmethod
    def operator(cls, user: Any) -> Actor:
        return cls(ActorKind.OPERATOR, user.get_username(), user_id=user.pk)

    @classmethod
    def command(cls, name: str) -> Actor:
        """A management command, named with the system account that ran it."""
        return cls(ActorKind.COMMAND, f"{name} (by {_system_user()})")


def _system_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
