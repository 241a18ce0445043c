"""Sign-in throttling for the members' UI and the admin: after MOMOR_SIGNIN_FAILURES failed
sign-ins for one account, or MOMOR_SIGNIN_FAILURES_PER_ADDRESS from one client address, in
a window of MOMOR_SIGNIN_WINDOW_SECONDS, every further sign-in of that account or address is
refused (429, whatever the password) until the window ends.

Windows are fixed (aligned on the clock), counted in Django's cache: Redis with REDIS_URL, so
every process sees the same counts; each process's memory otherwise, and whenever Redis
cannot be reached. The address is the ASGI client's (behind a proxy, let the server take it
from the proxy's headers: uvicorn --proxy-headers, daphne --proxy-headers)."""

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
            _store_call(lambda store: store.delete(counters[0][0]))
        else:
            _count_failure(counters)
        return response

    return guarded


def _counters(request: HttpRequest, username: str) -> list[tuple[str, int]]:
    """The cache key of this window's failures of the account, then of the address, each
    with its limit."""
    window = int(time.time() // settings.MOMOR_SIGNIN_WINDOW_SECONDS)
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    address = request.META.get("REMOTE_ADDR", "")
    return [
        (f"momor:signin:{window}:account:{account}", settings.MOMOR_SIGNIN_FAILURES),
        (f"momor:signin:{window}:address:{address}", settings.MOMOR_SIGNIN_FAILURES_PER_ADDRESS),
    ]


def _seconds_refused(counters: list[tuple[str, int]]) -> int:
    counts: dict[str, int] = _store_call(lambda store: store.get_many([k for k, _ in counters]))
    if all(counts.get(key, 0) < limit for key, limit in counters):
        return 0
    window = settings.MOMOR_SIGNIN_WINDOW_SECONDS
    return max(1, math.ceil(window - time.time() % window))


def _count_failure(counters: list[tuple[str, int]]) -> None:
    timeout = settings.MOMOR_SIGNIN_WINDOW_SECONDS + 1

    def count(store: BaseCache) -> None:
        for key, _ in counters:
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
