"""Organizations, their members, their Momor API keys and their saved provider keys."""

from __future__ import annotations

import base64
import secrets
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Now
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from accounts.secrets import decrypt_secret, encrypt_secret, hash_api_key, readable

if TYPE_CHECKING:
    from datetime import datetime

    from django.db.models.deletion import Collector


class Organization(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    zdr_hold = models.BooleanField(
        default=False, help_text="Hold every call of this organization to zero data retention."
    )
    allow_deprecated = models.BooleanField(
        default=False, help_text="Let deprecated models serve tier, auto and * selectors."
    )
    max_model_age = models.DurationField(
        null=True, blank=True, help_text="Oldest model a tier, auto or * selector may pick."
    )
    balance = models.DecimalField(
        max_digits=18,
        decimal_places=9,
        default=Decimal(0),
        help_text="USD; kept equal to the sum of the credits ledger.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "organization"], name="one_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"


class KeyKind(models.TextChoices):
    INFERENCE = "inference", "Inference (completions)"
    MANAGEMENT = "management", "Management API"


ADMIN_ROLES = (Role.ADMIN, Role.OWNER)


def creator_holds(kind: str, created_by_id: int | None, creator_role: str | None) -> bool:
    """Whether a key's creator still stands behind it: an inference key works while its
    creator is a member of its organization, a management key while they are an admin or
    owner there. A key made by an operator has no creator and belongs to the organization."""
    if created_by_id is None:
        return True
    if kind == KeyKind.MANAGEMENT:
        return creator_role in ADMIN_ROLES
    return creator_role is not None


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def with_creator_role(self) -> ApiKeyQuerySet:
        """Each key with `creator_role`: its creator's role in its organization, or None."""
        membership = Membership.objects.filter(
            user_id=OuterRef("created_by_id"), organization_id=OuterRef("organization_id")
        )
        return self.annotate(creator_role=Subquery(membership.values("role")[:1]))

    def active(self) -> ApiKeyQuerySet:
        """Keys that work now: not revoked, not expired, their creator still behind them."""
        now = timezone.now()
        held = (
            Q(created_by__isnull=True)
            | Q(kind=KeyKind.INFERENCE, creator_role__isnull=False)
            | Q(kind=KeyKind.MANAGEMENT, creator_role__in=ADMIN_ROLES)
        )
        live = self.filter(revoked_at__isnull=True).exclude(expires_at__lte=now)
        return live.with_creator_role().filter(held)


def revoke_and_detach(
    collector: Collector,
    field: models.Field[Any, Any],
    sub_objs: Any,
    using: str,
) -> None:
    """on_delete of a key's creator: the key is revoked before it loses its creator, so that
    deleting an account never turns its keys into the organization's own."""
    revoked_at = ApiKey._meta.get_field("revoked_at")
    collector.add_field_update(revoked_at, Coalesce(F("revoked_at"), Now()), sub_objs)
    collector.add_field_update(field, None, sub_objs)


class ApiKey(models.Model):
    """A Momor key: only its SHA-256 and a short visible prefix are ever stored."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=12, choices=KeyKind.choices, default=KeyKind.INFERENCE)
    prefix = models.CharField(max_length=20, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=revoke_and_detach
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    credit_limit = models.DecimalField(
        max_digits=18,
        decimal_places=9,
        null=True,
        blank=True,
        help_text="USD this key may spend in all; empty for no limit of its own.",
    )
    rate_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Requests per minute; empty for the deployment's default.",
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @classmethod
    def lookup_hash(cls, key: str) -> str:
        return hash_api_key(key)

    def is_usable(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at", "updated_at"])


class SavedKey(models.Model):
    """An organization's own key for a provider root (`azure`) or one region (`azure@eu`)."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="saved_keys"
    )
    provider = models.CharField(max_length=100, help_text="A provider root, or name@region.")
    label = models.CharField(max_length=100, blank=True)
    secret_encrypted = models.TextField(editable=False)
    suffix = models.CharField(max_length=4, editable=False, blank=True)
    zdr = models.BooleanField(
        default=False,
        help_text="This key's agreement with the provider covers zero data retention.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "provider"], name="one_key_per_provider"
            )
        ]
        ordering = ["provider"]

    def __str__(self) -> str:
        return f"{self.organization}: {self.provider}"

    @sensitive_variables("plain")
    def set_secret(self, plain: str) -> None:
        self.secret_encrypted = encrypt_secret(plain, salt=deployment_salt)
        self.suffix = plain[-4:] if len(plain) >= 12 else ""

    @property
    def secret(self) -> str:
        """The plain key; raises UnreadableSecret when the current key cannot decrypt it."""
        return decrypt_secret(self.secret_encrypted)

    @property
    def readable(self) -> bool:
        """Whether the current MOMOR_ENCRYPTION_KEY decrypts it (not after a rotation)."""
        return readable(self.secret_encrypted)

    @property
    def root(self) -> str:
        return self.provider.split("@", 1)[0]


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def pending(self) -> InvitationQuerySet:
        """Neither accepted, revoked nor expired."""
        live = self.filter(accepted_at__isnull=True, revoked_at__isnull=True)
        return live.filter(expires_at__gt=timezone.now())


class Invitation(models.Model):
    """An invitation to join an organization, accepted by its recipient alone through the
    single-use link mailed to them. Only the SHA-256 of the link's token is stored."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.email} to {self.organization} ({self.role})"

    def is_pending(self) -> bool:
        live = self.accepted_at is None and self.revoked_at is None
        return live and self.expires_at > timezone.now()


class EncryptionSalt(models.Model):
    """The deployment's salt for stretching a passphrase MOMOR_ENCRYPTION_KEY: one row, made
    on first use, read by every process. Each ciphertext also carries the salt it was made
    with, so a lost row loses nothing (the next encryption makes a new one)."""

    salt = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return "encryption salt"


def deployment_salt() -> str:
    """The salt, made by the first process that needs it (16 random bytes, URL-safe base64).
    Read on each encryption under a passphrase (rare: a key saved), never to decrypt."""
    fresh = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode()
    row, _ = EncryptionSalt.objects.get_or_create(pk=1, defaults={"salt": fresh})
    return row.salt


class BudgetScope(models.TextChoices):
    KEY = "key", "API key"
    MEMBER = "member", "Member"
    ORGANIZATION = "organization", "Organization"


class BudgetPeriod(models.TextChoices):
    DAILY = "daily", "Daily"
    WEEKLY = "weekly", "Weekly"
    MONTHLY = "monthly", "Monthly"
    TOTAL = "total", "Total"


class Budget(models.Model):
    """What may be spent in a period (a UTC calendar day, ISO week or month, or in all) by one
    API key, by the keys one member created, or by the whole organization."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="budgets")
    scope = models.CharField(max_length=12, choices=BudgetScope.choices)
    api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    member = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="budgets",
    )
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    amount = models.DecimalField(max_digits=18, decimal_places=9, help_text="USD.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["scope", "period"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(scope=BudgetScope.KEY, api_key__isnull=False, member__isnull=True)
                    | Q(scope=BudgetScope.MEMBER, api_key__isnull=True, member__isnull=False)
                    | Q(scope=BudgetScope.ORGANIZATION, api_key__isnull=True, member__isnull=True)
                ),
                name="budget_names_its_scope",
            ),
            models.CheckConstraint(condition=Q(amount__gte=0), name="budget_not_negative"),
            models.UniqueConstraint(
                fields=["api_key", "period"],
                condition=Q(scope=BudgetScope.KEY),
                name="one_key_budget_a_period",
            ),
            models.UniqueConstraint(
                fields=["organization", "member", "period"],
                condition=Q(scope=BudgetScope.MEMBER),
                name="one_member_budget_a_period",
            ),
            models.UniqueConstraint(
                fields=["organization", "period"],
                condition=Q(scope=BudgetScope.ORGANIZATION),
                name="one_organization_budget_a_period",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.organization}: {self.scope} {self.period} {self.amount} USD"
