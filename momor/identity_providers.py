"""The OpenID Connect identity providers members sign in with (docs/operations.md, "Single
sign-on"), read from the environment as django-allauth's `openid_connect` apps: one for each id
in MOMOR_SSO_PROVIDERS, its fields from MOMOR_SSO_<ID>_ISSUER, _CLIENT_ID, _SECRET (or
_SECRET_FILE) and _NAME. Each client secret is noted for the log filter to mask."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from core.redaction import note_secret
from momor.env import env_list, env_secret, env_str

PROVIDER_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def from_environment() -> list[dict[str, Any]]:
    return [_provider(provider_id) for provider_id in env_list("MOMOR_SSO_PROVIDERS", [])]


def _provider(provider_id: str) -> dict[str, Any]:
    if not PROVIDER_ID.fullmatch(provider_id):
        raise ImproperlyConfigured(
            f"MOMOR_SSO_PROVIDERS: {provider_id!r} is not an id of lowercase letters, digits and -"
        )
    prefix = f"MOMOR_SSO_{provider_id.upper().replace('-', '_')}_"
    fields = {
        "issuer": env_str(prefix + "ISSUER"),
        "client_id": env_str(prefix + "CLIENT_ID"),
        "secret": env_secret(prefix + "SECRET"),
    }
    for field, value in fields.items():
        if not value:
            raise ImproperlyConfigured(f"{prefix}{field.upper()} is required for {provider_id}")
    note_secret(fields["secret"])
    return {
        "provider_id": provider_id,
        "name": env_str(prefix + "NAME", provider_id),
        "client_id": fields["client_id"],
        "secret": fields["secret"],
        "settings": {"server_url": fields["issuer"], "oauth_pkce_enabled": True},
    }
