"""The members' web UI at `/`, Django's sign-in pages under `accounts/`, and `/static/`."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.urls import include, path, re_path

from accounts.signin import throttled
from accounts.views import (
    generations,
    home,
    invitations,
    keys,
    members,
    owner,
    playground,
    policy,
    provider_keys,
    static,
    usage,
)

urlpatterns = [
    path("accounts/login/", throttled(LoginView.as_view()), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", home.overview, name="overview"),
    path("welcome/", home.no_organization, name="no-organization"),
    path("organizations/switch/", home.switch_organization, name="switch-organization"),
    path("keys/", keys.key_list, name="keys"),
    path("keys/<int:pk>/limits/", keys.key_limits, name="key-limits"),
    path("keys/<int:pk>/revoke/", keys.key_revoke, name="key-revoke"),
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
    path("invitations/<str:token>/", invitations.invitation, name="invitation"),
    path("billing/", owner.billing, name="billing"),
    path("organization/", owner.organization, name="organization"),
    path("usage/", usage.usage, name="usage"),
    path("generations/", generations.generation_list, name="generations"),
    path("generations/export.csv", generations.generation_export, name="generations-export"),
    path("generations/<str:request_id>/", generations.generation_detail, name="generation"),
    path("playground/", playground.playground, name="playground"),
]

if settings.MOMOR_SERVE_STATIC:
    # A route on /static/ alone, so the middleware chain of the completions endpoint stays
    # async (WhiteNoise's middleware is sync-only).
    urlpatterns.append(re_path(r"^static/(?P<path>.+)$", static.static_file, name="static"))
