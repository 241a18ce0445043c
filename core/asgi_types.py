"""The ASGI protocol's callables and messages as Momor's guards and routes type them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# The application a guard wraps, called with the ASGI triple: Django's handler and Channels'
# routers each type that triple their own way.
ASGIApp = Callable[..., Awaitable[None]]
