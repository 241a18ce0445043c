"""Sign-in throttling for the members' UI and the admin: after MOMOR_SIGNIN_FAILURES failed
sign-ins for one account, or MOMOR_SIGNIN_FAILURES_PER_ADDRESS from one client address, within
MOMOR_SIGNIN_WINDOW_SECONDS, every further sign-in of that account or address is refused (429,
whatever the password) until those failures have aged out.

Failures are counted per window aligned on the clock, and a failure counts in its own window
and the next: a limit is reached by failures in the current and the previous window together,
so guesses that straddle a window's edge are not let through twice over. Counts live in
Django's cache: Redis with REDIS_URL, so every process sees the same counts; each process's
memory otherwise, and whenever Redis cannot be reached. The address is the ASGI client's
(behind a proxy, let the server take it from the proxy's headers: uvicorn --proxy-headers,
daphne --proxy-headers)."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.base import BaseCache
from django.core.cache.backends.locmem import LocMemCache
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from redis.exceptions import RedisError

log = logging.getLogger(__name__)
_local = LocMemCache("momor-signin", {"OPTIONS": {"MAX_ENTRIES": 100_000}})

View = Callable[..., HttpResponseBase]


def throttled(view: View) -> View:
    """Wrap a sign-in view: a refused sign-in never reaches it; a failed one is counted."""

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        counters = _counters(request, str(request.POST.get("username", "")))
        wait = _seconds_refused(counters)
        if wait:
            return _refused(request, wait)
        response = view(request, *args, **kwargs)
        if response.status_code == 302 and request.user.is_authenticated:
            _store_call(lambda store: store.delete_many(list(counters[0][:2])))
        else:
            _count_failure(counters)
        return response

    return guarded


Counter = tuple[str, str, int]
"""A limit's cache keys, of this window and of the previous one, and the limit."""


def _counters(request: HttpRequest, username: str) -> list[Counter]:
    """The failures of the account, then of the address, each with its limit."""
    window = int(time.time() // settings.MOMOR_SIGNIN_WINDOW_SECONDS)
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    address = request.META.get("REMOTE_ADDR", "")
    limits = [
        (f"account:{account}", settings.MOMOR_SIGNIN_FAILURES),
        (f"address:{address}", settings.MOMOR_SIGNIN_FAILURES_PER_ADDRESS),
    ]
    return [
        (f"momor:signin:{window}:{name}", f"momor:signin:{window - 1}:{name}", limit)
        for name, limit in limits
    ]


def _seconds_refused(counters: list[Counter]) -> int:
    """0 if no limit is reached, else how long until the failures that reach it age out."""
    keys = [key for now, before, _ in counters for key in (now, before)]
    counts: dict[str, int] = _store_call(lambda store: store.get_many(keys))
    window = settings.MOMOR_SIGNIN_WINDOW_SECONDS
    left = window - time.time() % window
    wait = 0.0
    for now, before, limit in counters:
        current = counts.get(now, 0)
        if current >= limit:  # they count until the end of the next window
            wait = max(wait, left + window)
        elif current + counts.get(before, 0) >= limit:
            wait = max(wait, left)
    return max(1, math.ceil(wait)) if wait else 0


def _count_failure(counters: list[Counter]) -> None:
    timeout = 2 * settings.MOMOR_SIGNIN_WINDOW_SECONDS + 1

    def count(store: BaseCache) -> None:
        for key, _, _ in counters:
            if not store.add(key, 1, timeout=timeout):
                store.incr(key)

    _store_call(count)


def _store_call(call: Callable[[BaseCache], Any]) -> Any:
    try:
        return call(cache)
    except RedisError:
        log.warning("sign-in throttling counts in this process: Redis unreachable")
        return call(_local)


def _refused(request: HttpRequest, wait: int) -> HttpResponse:
    context = {"minutes": math.ceil(wait / 60)}
    response = render(request, "registration/throttled.html", context, status=429)
    response["Retry-After"] = str(wait)
    return response
