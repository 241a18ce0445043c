"""Call records (generations and their attempts) and the credits ledger."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Count, F, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import ApiKey, Organization

MONEY_DIGITS, MONEY_PLACES = 18, 9  # USD to the nano-dollar, as the admission counters count


class GenerationStatus(models.TextChoices):
    SUCCESS = "success", "Served"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused"
    CANCELLED = "cancelled", "Cancelled by the client"


class GenerationApi(models.TextChoices):
    """The API a call came in on (`billing.calls.records.Api`)."""

    CHAT = "chat", "Chat Completions"
    MESSAGES = "messages", "Messages"
    RESPONSES = "responses", "Responses"
    EMBEDDINGS = "embeddings", "Embeddings"


API_CHARS = 12


@dataclass(frozen=True)
class GenerationTotals:
    calls: int
    cost: Decimal
    tokens: int


def _start_of(day: date) -> datetime:
    """Midnight at the start of `day`, in Momor's time zone (TIME_ZONE)."""
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


class GenerationQuerySet(models.QuerySet["Generation"]):
    """Reads of generations, for the UI's pages and the management API alike."""

    def for_org(self, organization_id: int) -> GenerationQuerySet:
        return self.filter(organization_id=organization_id)

    def filtered(
        self,
        *,
        model: str = "",
        provider: str = "",
        status: str = "",
        session: str = "",
        app: str = "",
        api: str = "",
        since: date | None = None,
        until: date | None = None,
    ) -> GenerationQuerySet:
        """The generations that match every filter given (an empty one matches all).

        `since` and `until` both include what they name: a date and time is that moment, a
        date the whole of that day in Momor's time zone. So `until=2026-01-31` keeps the calls
        of January 31st, and `until=2026-01-31T12:00Z` those made up to noon, noon included."""
        exact = {
            "model": model,
            "provider": provider,
            "status": status,
            "session_id": session,
            "app": app,
            "api": api,
        }
        rows = self.filter(**{name: value for name, value in exact.items() if value})
        if since is not None:
            start = since if isinstance(since, datetime) else _start_of(since)
            rows = rows.filter(created_at__gte=start)
        if isinstance(until, datetime):
            rows = rows.filter(created_at__lte=until)
        elif until is not None:
            rows = rows.filter(created_at__lt=_start_of(until + timedelta(days=1)))
        return rows

    def totals(self) -> GenerationTotals:
        """Calls, cost (USD) and tokens (prompt and completion) of these generations."""
        money = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
        zero = Value(Decimal(0), output_field=money)
        found = self.aggregate(
            calls=Count("pk"),
            cost=Coalesce(Sum("cost"), zero),
            tokens=Coalesce(Sum(F("prompt_tokens") + F("completion_tokens")), 0),
        )
        return GenerationTotals(**found)


class Generation(models.Model):
    """One call to Momor's API (`api`: Chat Completions, Messages, Responses or embeddings),
    whoever served it (or nobody)."""

    request_id = models.CharField(max_length=64)
    organization = models.ForeignKey(
        Organization,
        on_delete=models.CASCADE,
        related_name="generations",
        db_index=False,  # (organization, -created_at) serves it
    )
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="generations"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    selectors = models.JSONField(default=list)
    api = models.CharField(
        "API",
        max_length=API_CHARS,
        choices=GenerationApi.choices,
        default=GenerationApi.CHAT,
        db_default=GenerationApi.CHAT,
        help_text="The API called: Chat Completions, Messages, Responses or embeddings.",
    )
    # Read within an organization (its index), and from the daily rollups for the menus.
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=120, blank=True)
    streamed = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=GenerationStatus.choices)
    http_status = models.PositiveSmallIntegerField(default=200)
    error = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    native_finish_reason = models.CharField(max_length=80, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    usage_estimated = models.BooleanField(default=False)
    cost = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, default=Decimal(0)
    )
    charge_capped = models.BooleanField(
        default=False,
        db_default=False,
        help_text="An attempt's reported usage cost more than the call's reservation: it was "
        "charged the reservation, its usage kept as reported.",
    )
    prices = models.JSONField(default=dict, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    first_token_ms = models.PositiveIntegerField(null=True, blank=True)
    client_request_id = models.CharField(
        max_length=128, blank=True, help_text="The caller's X-Request-Id."
    )
    session_id = models.CharField(
        max_length=256, blank=True, help_text="X-Session-Id, or the body's session_id."
    )
    app = models.CharField(
        max_length=2048, blank=True, help_text="The calling app: X-Title, else HTTP-Referer."
    )
    referer = models.CharField(max_length=2048, blank=True, help_text="HTTP-Referer.")
    routing = models.JSONField(
        default=dict,
        blank=True,
        help_text="The provider filters and order the call set, and why each offering left "
        "out was.",
    )
    # The W3C trace the call belongs to (32 hex digits), when it came with one or was traced.
    trace_id = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(db_index=True)
    recorded_at = models.DateTimeField(auto_now_add=True)

    objects = GenerationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"]),
            models.Index(
                fields=["organization", "client_request_id"],
                name="generation_client_request_id",
                condition=~models.Q(client_request_id=""),
            ),
            models.Index(
                fields=["organization", "session_id", "-created_at"],
                name="generation_session",
                condition=~models.Q(session_id=""),
            ),
            # The admin's filters and search across organizations (billing.admin).
            models.Index(fields=["provider", "-created_at"], name="generation_provider"),
            models.Index(fields=["model", "-created_at"], name="generation_model"),
            models.Index(
                fields=["status", "-created_at"],
                name="generation_unserved",
                condition=~models.Q(status="success"),
            ),
            models.Index(
                fields=["api", "-created_at"],
                name="generation_api",
                condition=~models.Q(api="chat"),
            ),
        ]
        constraints = [
            # On PostgreSQL the table is partitioned by month of created_at, and a unique key
            # must hold the partition key: a record delivered twice carries the same moment.
            # It also finds a generation by its request id.
            models.UniqueConstraint(
                fields=["request_id", "created_at"], name="one_generation_per_call"
            )
        ]

    def __str__(self) -> str:
        return self.request_id

    @property
    def requested(self) -> str:
        """The selectors the call named, for a call no model served."""
        return ", ".join(self.selectors or [])


class KeySource(models.TextChoices):
    OWN = "own", "Organization's saved key"
    MOMOR = "momor", "Momor's key"


class AttemptQuerySet(models.QuerySet["Attempt"]):
    """Attempts are read by their generation's moment as well as its id: the moment names
    the month partition that holds them, so no other partition is read."""

    def of(self, generation: Generation) -> AttemptQuerySet:
        """The generation's attempts, in the order they were tried."""
        rows = self.filter(generation_id=generation.pk, created_at=generation.created_at)
        return rows.order_by("position")

    def of_each(self, generations: Sequence[Generation]) -> dict[int, list[Attempt]]:
        """The attempts of each of these generations, by generation id, in one query that
        reads only the partitions of the months they span."""
        found: dict[int, list[Attempt]] = {g.pk: [] for g in generations}
        if not found:
            return found
        moments = [g.created_at for g in generations]
        rows = self.filter(
            generation_id__in=found, created_at__gte=min(moments), created_at__lte=max(moments)
        )
        for attempt in rows.order_by("generation_id", "position"):
            found[attempt.generation_id].append(attempt)
        return found


class Attempt(models.Model):
    """One try of one offering within a generation."""

    generation = models.ForeignKey(
        Generation,
        on_delete=models.CASCADE,
        related_name="attempts",
        db_constraint=False,
        db_index=False,  # one_attempt_per_slot serves it
    )
    created_at = models.DateTimeField()
    """The generation's moment: attempts are partitioned by month as their generations are."""
    position = models.PositiveSmallIntegerField()
    model = models.CharField(max_length=200)
    provider = models.CharField(max_length=120)
    region = models.CharField(max_length=60, blank=True)
    upstream_id = models.CharField(max_length=200)
    key_source = models.CharField(max_length=6, choices=KeySource.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    first_token_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, default=Decimal(0)
    )
    prices = models.JSONField(default=dict, blank=True)

    objects = AttemptQuerySet.as_manager()

    class Meta:
        ordering = ["generation", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "position", "created_at"], name="one_attempt_per_slot"
            )
        ]

    def __str__(self) -> str:
        return f"{self.generation_id}#{self.position} {self.provider}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.created_at is None:
            self.created_at = self.generation.created_at
        super().save(*args, **kwargs)


class EntryKind(models.TextChoices):
    TOPUP = "topup", "Top-up"
    CHARGE = "charge", "Charge"
    REFUND = "refund", "Refund"
    ADJUSTMENT = "adjustment", "Adjustment"


class LedgerEntry(models.Model):
    """A signed movement of an organization's credits; the balance is their running sum."""

    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="ledger")
    kind = models.CharField(max_length=12, choices=EntryKind.choices)
    amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    balance_after = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    generation = models.ForeignKey(
        Generation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger",
        db_constraint=False,  # a retention drop removes old generations; their charges stay
    )
    idempotency_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    api_key_id = models.BigIntegerField(null=True, blank=True)
    """A charge's API key (none for a call without one, or from before it was kept); not a
    foreign key, as a deleted key's spend stays in its organization's figures."""
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} ({self.organization})"


class DeadLetter(models.Model):
    """A call's record that could not be stored as a generation, kept as it arrived, with why;
    its charge is posted to the ledger all the same when its cost could be read."""

    request_id = models.CharField(max_length=64, blank=True)
    organization_id = models.BigIntegerField(null=True, blank=True)
    """Not a foreign key: an organization that no longer exists may be why it was parked."""
    payload = models.TextField()
    error = models.TextField()
    cost = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    charge_posted = models.BooleanField(default=False)
    parked_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-parked_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["request_id"],
                condition=~models.Q(request_id=""),
                name="one_dead_letter_per_call",
            )
        ]

    def __str__(self) -> str:
        return self.request_id or f"dead letter {self.pk}"


class DailyRollup(models.Model):
    """The sums of an organization's generations of one day (in Momor's time zone), per model,
    provider, API key, calling app and API called: what the overview, usage, billing and key
    spend read.
    Kept by the recording in the generation's own transaction (`billing.usage.rollups`)."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="daily_rollups"
    )
    day = models.DateField()
    model = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=120, blank=True)
    api_key_id = models.BigIntegerField(default=0)
    """0 for calls made without a key (the playground); not a foreign key, as a deleted key's
    spend stays in its organization's figures."""
    app = models.CharField(max_length=200, blank=True, default="")
    requested = models.CharField(max_length=200, blank=True, default="")
    """What a call no model served asked for (its first selector); empty for served calls."""
    api = models.CharField(
        max_length=API_CHARS,
        choices=GenerationApi.choices,
        default=GenerationApi.CHAT,
        db_default=GenerationApi.CHAT,
    )
    calls = models.BigIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=MONEY_DIGITS + 6, decimal_places=MONEY_PLACES, default=Decimal(0)
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "organization",
                    "day",
                    "model",
                    "provider",
                    "api_key_id",
                    "app",
                    "requested",
                    "api",
                ],
                name="one_daily_rollup_per_slot",
            )
        ]
        indexes = [models.Index(fields=["api_key_id", "day"])]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} {self.model}"


class DroppedCall(models.Model):
    """A call whose generation the retention dropped: its request id, kept a while past the
    retention so that its record, delivered again, is not stored a second time
    (`billing.retention.dropped`)."""

    request_id = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.request_id


class RetentionHorizon(models.Model):
    """One row: the moment before which the retention may have dropped call records."""

    dropped_before = models.DateTimeField()

    def __str__(self) -> str:
        return f"records dropped before {self.dropped_before}"
