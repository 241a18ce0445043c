"""The one hand-off from the gateway: `record_call` queues a finished call's record and returns
at once; a background writer stores it (idempotent on the request id)."""

from __future__ import annotations

import logging
import queue
import threading

from django.db import IntegrityError, close_old_connections, transaction

from billing.cost import tokens_cost
from billing.live import publish_generation
from billing.models import Attempt, Generation
from billing.records import AttemptRecord, CallRecord

log = logging.getLogger(__name__)

_queue: queue.SimpleQueue[CallRecord] = queue.SimpleQueue()
_writer: threading.Thread | None = None
_writer_lock = threading.Lock()
_idle = threading.Condition()
_pending = 0


def record_call(record: CallRecord) -> None:
    """Hand a finished call to billing; never blocks on the database."""
    global _pending
    _ensure_writer()
    with _idle:
        _pending += 1
    _queue.put(record)


def drain(timeout: float = 10.0) -> bool:
    """Wait until every handed-off record is written; False if that took too long."""
    with _idle:
        return _idle.wait_for(lambda: _pending == 0, timeout=timeout)


def _ensure_writer() -> None:
    global _writer
    if _writer is not None and _writer.is_alive():
        return
    with _writer_lock:
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=_write_forever, name="momor-recorder", daemon=True)
            _writer.start()


def _write_forever() -> None:
    global _pending
    while True:
        record = _queue.get()
        close_old_connections()
        try:
            generation_record(record)
        except Exception:
            log.exception("could not record call %s", record.request_id)
        finally:
            with _idle:
                _pending -= 1
                _idle.notify_all()


def generation_record(record: CallRecord) -> Generation:
    """Store one call and its attempts; a record already stored is returned unchanged."""
    existing = Generation.objects.filter(request_id=record.request_id).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            generation = Generation.objects.create(**_generation_fields(record))
            Attempt.objects.bulk_create(
                _attempt_row(generation, attempt) for attempt in record.attempts
            )
        publish_generation(generation)
        return generation
    except IntegrityError:
        return Generation.objects.get(request_id=record.request_id)


def _generation_fields(record: CallRecord) -> dict[str, object]:
    served = record.attempts[-1] if record.status == "success" and record.attempts else None
    cost = tokens_cost(record.tokens, served.prices) if served else 0
    return {
        "request_id": record.request_id,
        "organization_id": record.organization_id,
        "api_key_id": record.api_key_id,
        "user_id": record.user_id,
        "selectors": record.selectors,
        "model": record.model,
        "provider": record.provider,
        "streamed": record.streamed,
        "status": record.status,
        "http_status": record.http_status,
        "error": record.error,
        "finish_reason": record.finish_reason,
        "native_finish_reason": record.native_finish_reason,
        "prompt_tokens": record.tokens.prompt,
        "completion_tokens": record.tokens.completion,
        "cached_tokens": record.tokens.cached,
        "cache_write_tokens": record.tokens.cache_write,
        "reasoning_tokens": record.tokens.reasoning,
        "usage_estimated": record.tokens.estimated,
        "cost": cost,
        "prices": served.prices if served else {},
        "latency_ms": record.latency_ms,
        "first_token_ms": record.first_token_ms,
        "created_at": record.created_at,
    }


def _attempt_row(generation: Generation, attempt: AttemptRecord) -> Attempt:
    tokens = attempt.tokens
    return Attempt(
        generation=generation,
        position=attempt.position,
        model=attempt.model,
        provider=attempt.provider,
        region=attempt.region,
        upstream_id=attempt.upstream_id,
        key_source=attempt.key_source,
        http_status=attempt.http_status,
        error=attempt.error,
        latency_ms=attempt.latency_ms,
        first_token_ms=attempt.first_token_ms,
        prompt_tokens=tokens.prompt if tokens else 0,
        completion_tokens=tokens.completion if tokens else 0,
        cost=tokens_cost(tokens, attempt.prices) if tokens else 0,
        prices=attempt.prices,
    )
