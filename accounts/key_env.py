"""Which environment variables may hold a provider key.

Momor sends a provider's key as a credential to the provider's `base_url`, which the operator
sets; a `key_env` naming any variable would send that variable's value there, Momor's own
`MOMOR_SECRET_KEY` or `MOMOR_ENCRYPTION_KEY` included. So the key_env of a provider (catalog
file, admin) names either a variable of the documented prefix `MOMOR_PROVIDER_KEY_` or one of
the providers' well-known names; the rule is checked where key_env is written and again where
it is read. `save_provider_key --key-env` (an operator's one-off) may read any variable except
Momor's own settings."""

from __future__ import annotations

import re

PROVIDER_KEY_PREFIX = "MOMOR_PROVIDER_KEY_"
WELL_KNOWN = frozenset(
    {
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "VERTEX_SERVICE_ACCOUNT_JSON",
        "MISTRAL_API_KEY",
        "DEEPINFRA_API_KEY",
    }
)
# Variables Momor (or Django, Celery under it) reads as settings, never a provider's key.
MOMOR_SETTINGS = frozenset({"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"})
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def key_env_problem(name: str) -> str | None:
    """Why `name` may not be a provider's key_env, or None when it may."""
    if name in WELL_KNOWN or (
        name.startswith(PROVIDER_KEY_PREFIX)
        and len(name) > len(PROVIDER_KEY_PREFIX)
        and _NAME.fullmatch(name)
    ):
        return None
    return (
        f"key_env {name} is not allowed: name a variable {PROVIDER_KEY_PREFIX}<NAME> "
        f"(capitals, digits, _) or one of {', '.join(sorted(WELL_KNOWN))}"
    )


def is_momor_setting(name: str) -> bool:
    """Whether Momor reads `name` as one of its own settings."""
    if name.startswith(PROVIDER_KEY_PREFIX):
        return False
    return name.startswith("MOMOR_") or name in MOMOR_SETTINGS
