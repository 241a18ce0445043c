"""Admission's Redis script calls made in the same turn of the event loop go out together: one
pipeline on the loop's connection, one write and one read for all of them. Each script still
runs atomically, in the order the calls were made. While the connection is open the batch is
written at the end of the turn and its replies handed out from the connection's callback, with
no task of its own; the first batch (which connects) and scripts Redis does not know yet (which
are loaded, then run again) go through a task. A pipeline that takes longer than the Redis
time-out fails every call in it, drops the connection and tells the breaker; so does a reply that
says Redis takes no writes (out of memory, read-only: `core.redis_refusals`)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from billing.admission.shards import AsyncTarget, Call
from core.breaker import Breaker
from core.redis_refusals import REFUSALS


@dataclass(slots=True)
class ScriptCall:
    script: str
    keys: list[str]
    args: list[Any]
    future: asyncio.Future[Any]


class Coalescer:
    def __init__(self, client: Callable[[], AsyncTarget], breaker: Breaker) -> None:
        self._client, self._breaker = client, breaker
        self._waiting: dict[asyncio.AbstractEventLoop, list[ScriptCall]] = {}
        self._sending: set[asyncio.Task[None]] = set()

    async def run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA of `script` (loaded when Redis does not know it yet), sent with the other
        calls of this turn of the loop."""
        return await self.submit(script, keys, args)

    def submit(self, script: str, keys: list[str], args: list[Any]) -> asyncio.Future[Any]:
        """The same, as a future: the script is sent even if nobody awaits it."""
        loop = asyncio.get_running_loop()
        waiting = self._waiting.get(loop)
        if waiting is None:
            waiting = self._waiting[loop] = []
            loop.call_soon(self._flush, loop)
        future: asyncio.Future[Any] = loop.create_future()
        waiting.append(ScriptCall(script, keys, args, future))
        return future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        calls = self._waiting.pop(loop)
        target = self._client()
        sent = target.send_now([_command(call) for call in calls])
        if sent is None:  # not connected yet (or a cluster): connecting and all in a task
            self._in_task(loop, calls)
            return
        late = loop.call_later(settings.MOMOR_REDIS_TIMEOUT_SECONDS, self._late, calls, target)
        sent.add_done_callback(partial(self._answered, loop, calls, late))

    def _in_task(self, loop: asyncio.AbstractEventLoop, calls: list[ScriptCall]) -> None:
        task = loop.create_task(self._send(calls))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    def _answered(
        self,
        loop: asyncio.AbstractEventLoop,
        calls: list[ScriptCall],
        late: asyncio.TimerHandle,
        sent: asyncio.Future[list[Any]],
    ) -> None:
        """The replies of a batch sent at once: each to its call; scripts Redis did not know
        go again through the task, which loads them."""
        late.cancel()
        if sent.cancelled() or sent.exception() is not None:
            failure = sent.exception() if not sent.cancelled() else RedisConnectionError()
            if isinstance(failure, RedisConnectionError | RedisTimeoutError):
                self._breaker.failed()
            _settle(calls, [failure] * len(calls))
            return
        results = sent.result()
        unknown = [call for call, result in zip(calls, results, strict=True)
                   if isinstance(result, NoScriptError)]  # fmt: skip
        _tell(self._breaker, results)
        _settle(calls, results, again=unknown)
        if unknown:
            self._in_task(loop, unknown)

    def _late(self, calls: list[ScriptCall], target: AsyncTarget) -> None:
        """Redis did not answer a batch in time: its calls fail, the connection is dropped."""
        self._breaker.failed()
        target.reset()
        _settle(calls, [RedisTimeoutError("Redis did not answer in time")] * len(calls))

    async def _send(self, calls: list[ScriptCall]) -> None:
        try:
            results = await self._bounded(calls)
        except asyncio.CancelledError:
            for call in calls:
                call.future.cancel()
            raise
        except Exception as exc:
            results = [exc] * len(calls)
        _settle(calls, results)

    async def _bounded(self, calls: list[ScriptCall]) -> list[Any]:
        """The task's way: connecting first when needed, and loading unknown scripts."""
        try:
            async with asyncio.timeout(settings.MOMOR_REDIS_TIMEOUT_SECONDS):
                results = await self._execute(calls)
        except TimeoutError:
            self._breaker.failed()
            self._client().reset()  # a Redis that stopped answering is not waited on again
            raise RedisTimeoutError("Redis did not answer in time") from None
        except (RedisConnectionError, RedisTimeoutError):
            self._breaker.failed()
            raise
        _tell(self._breaker, results)
        return results

    async def _execute(self, calls: list[ScriptCall]) -> list[Any]:
        target = self._client()
        results = await target.evalsha_many([_call(call) for call in calls])
        unknown = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
        if unknown:  # a Redis that restarted, or has never seen the script
            for script in {calls[i].script for i in unknown}:
                await target.script_load(script)
            again = await target.evalsha_many([_call(calls[i]) for i in unknown])
            for i, result in zip(unknown, again, strict=True):
                results[i] = result
        return results


def _tell(breaker: Breaker, results: list[Any]) -> None:
    """Redis answered: it can be used, unless a reply says it takes no writes."""
    if any(isinstance(result, REFUSALS) for result in results):
        breaker.failed()
    else:
        breaker.succeeded()


def _settle(
    calls: list[ScriptCall], results: list[Any], again: list[ScriptCall] | None = None
) -> None:
    going = {id(call) for call in again or ()}
    for call, result in zip(calls, results, strict=True):
        if call.future.done() or id(call) in going:  # its caller went away, or it goes again
            continue
        if isinstance(result, BaseException):
            call.future.set_exception(result)
        else:
            call.future.set_result(result)


def _command(call: ScriptCall) -> tuple[Any, ...]:
    return ("EVALSHA", sha_of(call.script), len(call.keys), *call.keys, *call.args)


def _call(call: ScriptCall) -> Call:
    return sha_of(call.script), call.keys, call.args


@cache
def sha_of(script: str) -> str:
    return hashlib.sha1(script.encode(), usedforsecurity=False).hexdigest()
