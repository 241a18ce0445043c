"""An organization's alerts: the rules its owners and admins set (a share of any budget, a
balance below an amount, a provider's error rate over a level, dead letters present), the
webhook endpoints they are sent to, each event a rule fired, and each delivery of an event
with every attempt and its answer."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Q
from django.views.decorators.debug import sensitive_variables

from accounts.models import Organization, deployment_salt
from accounts.secrets import decrypt_secret, encrypt_secret


class AlertKind(models.TextChoices):
    BUDGET = "budget", "Share of a budget spent (%)"
    BALANCE = "balance", "Balance below (USD)"
    ERROR_RATE = "error_rate", "A provider's error rate over (%)"
    DEAD_LETTERS = "dead_letters", "Dead letters at least"


class AlertRule(models.Model):
    """One threshold. A budget rule fires once for each budget that reaches it, once in each
    of the budget's windows; the others fire when their condition starts to hold and again only
    after it has stopped holding."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="alert_rules"
    )
    kind = models.CharField(max_length=16, choices=AlertKind.choices)
    threshold = models.DecimalField(max_digits=18, decimal_places=6)
    email = models.BooleanField(default=True, help_text="Mail the owners and admins too.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "threshold"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "kind", "threshold"], name="one_rule_a_threshold"
            ),
            models.CheckConstraint(condition=Q(threshold__gte=0), name="threshold_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.threshold.normalize():f}"


class AlertState(models.Model):
    """Whether a rule's condition held for a subject (a provider, the balance) at the last
    check, and how many times it has started to: the episode an event belongs to."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="states")
    subject = models.CharField(max_length=200)
    holding = models.BooleanField(default=False)
    episode = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rule", "subject"], name="one_state_a_subject")
        ]

    def __str__(self) -> str:
        return f"{self.rule} {self.subject}"


class WebhookEndpoint(models.Model):
    """Where an organization's alerts are posted, signed with the endpoint's own secret."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    secret_encrypted = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.url

    @sensitive_variables("secret")
    def set_secret(self, secret: str) -> None:
        self.secret_encrypted = encrypt_secret(secret, salt=deployment_salt)

    def secret(self) -> str:
        return decrypt_secret(self.secret_encrypted)


class AlertEvent(models.Model):
    """One firing of a rule for one subject in one episode (a budget's window, or a spell of
    its condition holding): unique, so however many processes check, it fires once."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="alert_events"
    )
    rule = models.ForeignKey(
        AlertRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    type = models.CharField(max_length=40)
    key = models.CharField(max_length=300)
    """What makes it once: the rule, the subject and the episode (blank for a test event)."""
    summary = models.CharField(max_length=300)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "key"], condition=~Q(key=""), name="one_event_an_episode"
            )
        ]

    def __str__(self) -> str:
        return self.summary

    @property
    def public_id(self) -> str:
        return f"evt_{self.pk}"


class Channel(models.TextChoices):
    WEBHOOK = "webhook", "Webhook"
    EMAIL = "email", "E-mail"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Gave up"


class Delivery(models.Model):
    """An event on its way to one webhook endpoint, or to the owners' and admins' mailboxes:
    tried until it is taken or a day has passed, each try an attempt."""

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    endpoint = models.ForeignKey(
        WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status=DeliveryStatus.PENDING),
                name="deliveries_due",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint or 'e-mail'}"


class DeliveryAttempt(models.Model):
    """One try of a delivery and what came back: the HTTP status and the start of the body, or
    the error that stopped it."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    number = models.PositiveIntegerField()
    at = models.DateTimeField(auto_now_add=True)
    ok = models.BooleanField(default=False)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    answer = models.TextField(blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="one_try_a_number")
        ]

    def __str__(self) -> str:
        return f"{self.delivery_id}#{self.number}"


DEFAULT_BUDGET_SHARES = (Decimal(50), Decimal(80), Decimal(100))
