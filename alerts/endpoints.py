"""What the Alerts page and the management API share: a rule's problems, an endpoint's URL
problem, and an endpoint made or its secret rolled, each with the secret shown that once."""

from __future__ import annotations

from decimal import Decimal

from accounts.models import Organization
from alerts.models import AlertKind, AlertRule, WebhookEndpoint
from alerts.signing import new_secret

SHARE_KINDS = (AlertKind.BUDGET, AlertKind.ERROR_RATE)
"""Rules whose threshold is a percentage."""
MOST_PERCENT = 1000


def rule_problem(organization: Organization, kind: str, threshold: Decimal) -> str | None:
    """Why the organization cannot have this rule (said of its threshold), or None."""
    if kind in SHARE_KINDS and threshold > MOST_PERCENT:
        return f"A percentage is at most {MOST_PERCENT}."
    if AlertRule.objects.filter(organization=organization, kind=kind, threshold=threshold).exists():
        return "This rule is set already."
    return None


def url_problem(url: str) -> str | None:
    if not url.lower().startswith(("http://", "https://")):
        return "Enter an http:// or https:// URL."
    return None


def endpoint_made(
    organization: Organization, url: str, description: str
) -> tuple[WebhookEndpoint, str]:
    """An endpoint, not saved yet, and its new signing secret."""
    secret = new_secret()
    endpoint = WebhookEndpoint(organization=organization, url=url, description=description)
    endpoint.set_secret(secret)
    return endpoint, secret


def secret_rolled(endpoint: WebhookEndpoint) -> str:
    """Sign the endpoint's deliveries with a new secret from now on; the secret."""
    secret = new_secret()
    endpoint.set_secret(secret)
    endpoint.save(update_fields=["secret_encrypted"])
    return secret
