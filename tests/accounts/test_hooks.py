"""accounts.hooks: what accounts needs from the apps above it, registered by them when Django
starts; asked for when nobody registered it, a configuration error that names the app."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from accounts import hooks
from billing.usage.reads import with_spend


def test_billing_registers_the_spend_of_keys() -> None:
    assert hooks.key_spend() is with_spend


def test_a_hook_nobody_registered_names_the_app_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hooks, "_registered", hooks._Registered())
    with pytest.raises(ImproperlyConfigured, match="install `gateway`"):
        hooks.provider_places()
    with pytest.raises(ImproperlyConfigured, match="install `billing`"):
        hooks.key_spend()
