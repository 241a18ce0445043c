"""Sign-in throttling for the members' UI and the admin, within MOMOR_SIGNIN_WINDOW_SECONDS:
after MOMOR_SIGNIN_FAILURES_PER_ADDRESS failed sign-ins from one client address, every sign-in
from it is refused (429, whatever the password); after MOMOR_SIGNIN_FAILURES failed sign-ins
for one account, every sign-in of it is refused from each address that failed on it, while an
address that has not failed on it still signs in with the right password (so nobody can lock
an owner out with a few wrong passwords) and gets one guess before it is refused too.

The account is the one Django's ModelBackend resolves the name to (NFKC, as the sign-in form
normalises it), so a look-alike name counts as the account it signs in as. An address is an
IPv4 address, or an IPv6 /64 (one subscriber's network: rotating within it changes nothing),
an IPv4-mapped IPv6 address counting as its IPv4 address.

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
import ipaddress
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
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
        account, pair, address = _counters(request, str(request.POST.get("username", "")))
        wait = _seconds_refused([[address], [account, pair]])
        if wait:
            return _refused(request, wait)
        response = view(request, *args, **kwargs)
        if response.status_code == 302 and request.user.is_authenticated:
            cleared = [*account[:2], *pair[:2]]
            _store_call(lambda store: store.delete_many(cleared))
        else:
            _count_failure([account, pair, address])
        return response

    return guarded


Counter = tuple[str, str, int]
"""A limit's cache keys, of this window and of the previous one, and the limit."""


def _counters(request: HttpRequest, username: str) -> list[Counter]:
    """The failures of the account, of the account from this address, and of the address,
    each with its limit."""
    window = int(time.time() // settings.MOMOR_SIGNIN_WINDOW_SECONDS)
    account = account_key(username)
    address = address_key(request.META.get("REMOTE_ADDR", ""))
    limits = [
        (f"account:{account}", settings.MOMOR_SIGNIN_FAILURES),
        (f"pair:{account}:{address}", 1),
        (f"address:{address}", settings.MOMOR_SIGNIN_FAILURES_PER_ADDRESS),
    ]
    return [
        (f"momor:signin:{window}:{name}", f"momor:signin:{window - 1}:{name}", limit)
        for name, limit in limits
    ]


def account_key(username: str) -> str:
    """The account a sign-in names, as ModelBackend finds it: the name NFKC-normalised (and
    stripped, as the form does) and looked up by the user model's natural key; a name of no
    account is counted by its normalised form."""
    user_model = get_user_model()
    name = user_model.normalize_username(username.strip())
    try:
        user = user_model._default_manager.get_by_natural_key(name)
    except user_model.DoesNotExist:
        return "name:" + hashlib.sha256(name.casefold().encode()).hexdigest()[:32]
    return f"user:{user.pk}"


def address_key(address: str) -> str:
    """An IPv4 address as it is; an IPv6 address by its /64, or by the IPv4 address it maps."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _seconds_refused(locks: list[list[Counter]]) -> int:
    """0 if no lock holds, else how long until the failures that hold them age out. A lock
    holds while every counter of it has reached its limit."""
    keys = [key for lock in locks for now, before, _ in lock for key in (now, before)]
    counts: dict[str, int] = _store_call(lambda store: store.get_many(keys))
    window = settings.MOMOR_SIGNIN_WINDOW_SECONDS
    left = window - time.time() % window
    wait = 0.0
    for lock in locks:
        waits = [_wait(counts, counter, left, window) for counter in lock]
        wait = max(wait, min(waits))
    return max(1, math.ceil(wait)) if wait else 0


def _wait(counts: dict[str, int], counter: Counter, left: float, window: int) -> float:
    now, before, limit = counter
    current = counts.get(now, 0)
    if current >= limit:  # they count until the end of the next window
        return left + window
    if current + counts.get(before, 0) >= limit:
        return left
    return 0.0


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
