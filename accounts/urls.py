"""Accounts' pages of the members' UI (API keys, provider keys, policy, members and
invitations, the organization and its switcher) and Django's sign-in pages under `accounts/`."""

from __future__ import annotations

from django.contrib.auth.views import LoginView
from django.urls import include, path

from accounts.signin import throttled
from accounts.sso.form_action import admits_identity_providers
from accounts.sso.password import PasswordSignInForm
from accounts.views import (
    audit,
    budgets,
    invitations,
    keys,
    members,
    organization,
    passwords,
    policy,
    provider_keys,
)

urlpatterns = [
    path(
        "accounts/login/",
        throttled(
            admits_identity_providers(LoginView.as_view(authentication_form=PasswordSignInForm))
        ),
        name="login",
    ),
    path(
        "accounts/password_change/",
        passwords.PasswordChange.as_view(),
        name="password_change",
    ),
    path(
        "accounts/reset/<uidb64>/<token>/",
        passwords.PasswordResetConfirm.as_view(),
        name="password_reset_confirm",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("welcome/", organization.no_organization, name="no-organization"),
    path("organizations/switch/", organization.switch_organization, name="switch-organization"),
    path("keys/", keys.key_list, name="keys"),
    path("keys/<int:pk>/limits/", keys.key_limits, name="key-limits"),
    path("keys/<int:pk>/revoke/", keys.key_revoke, name="key-revoke"),
    path("budgets/", budgets.budget_change, name="budget-change"),
    path("provider-keys/", provider_keys.provider_key_list, name="provider-keys"),
    path(
        "provider-keys/<int:pk>/remove/",
        provider_keys.provider_key_remove,
        name="provider-key-remove",
    ),
    path("policy/", policy.policy, name="policy"),
    path("members/", members.member_list, name="members"),
    path("members/<int:pk>/role/", members.member_role, name="member-role"),
    path("members/<int:pk>/remove/", members.member_remove, name="member-remove"),
    path(
        "members/invitations/<int:pk>/revoke/",
        members.invitation_cancel,
        name="invitation-revoke",
    ),
    path("invitations/accept/", invitations.invitation_opened, name="invitation-accept"),
    path("invitations/<str:token>/", invitations.invitation, name="invitation"),
    path("organization/", organization.organization, name="organization"),
    path("audit/", audit.audit_list, name="audit"),
    path("audit/export.csv", audit.audit_export, name="audit-export"),
]
