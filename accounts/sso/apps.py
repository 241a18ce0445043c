from __future__ import annotations

from django.apps import AppConfig


class SingleSignOnConfig(AppConfig):
    name = "accounts.sso"
    label = "sso"
    verbose_name = "Single sign-on"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from allauth.account.signals import user_logged_in, user_signed_up

        from accounts.sso.joining import audit_sign_up, join_on_sign_in

        user_logged_in.connect(join_on_sign_in, dispatch_uid="momor-sso-join")
        user_signed_up.connect(audit_sign_up, dispatch_uid="momor-sso-sign-up")
