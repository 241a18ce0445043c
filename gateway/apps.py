from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from accounts.hooks import register_provider_places


class GatewayConfig(AppConfig):
    name = "gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django requires of modules that define or
        # query them.
        from billing.calls.observers import watch
        from gateway.catalog.places import CatalogPlaces
        from gateway.ops.setup import install
        from gateway.routing import performance as figures

        register_provider_places(CatalogPlaces())
        watch(figures.observe)  # the sorts' figures, from each handed-off call
        install()
        configure_outbound()
        setting_changed.connect(_outbound_setting_changed)


def configure_outbound() -> None:
    """Hand the outbound settings to the Django-free modules that use them."""
    from django.conf import settings

    from core.outbound import networks
    from gateway.upstream import google_auth

    try:
        allowed = networks(settings.MOMOR_OUTBOUND_ALLOW)
    except ValueError as exc:
        raise ImproperlyConfigured(f"MOMOR_OUTBOUND_ALLOW: {exc}") from None
    google_auth.configure(settings.MOMOR_GOOGLE_TOKEN_URL, allowed)


def _outbound_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("MOMOR_GOOGLE_TOKEN_URL", "MOMOR_OUTBOUND_ALLOW"):
        configure_outbound()
