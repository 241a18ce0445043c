"""Single sign-on's routes: under accounts/, each identity provider's sign-in and callback
(`accounts/oidc/<provider id>/login/` and `.../login/callback/`, the redirect URI to register
with it) and allauth's pages for a sign-in cancelled or failed; the owner's page, sso/."""

from __future__ import annotations

from allauth.socialaccount import views
from allauth.socialaccount.providers.openid_connect.views import callback
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from accounts.sso import sign_in
from accounts.sso import views as pages

urlpatterns = [
    # allauth's own openid_connect routes, the start of a sign-in taken by Momor's
    path(
        "accounts/oidc/",
        include(
            [
                re_path(
                    r"^(?P<provider_id>[^/]+)/",
                    include(
                        [
                            path("login/", sign_in.start, name="openid_connect_login"),
                            path("login/callback/", callback, name="openid_connect_callback"),
                        ]
                    ),
                )
            ]
        ),
    ),
    path("accounts/sso/cancelled/", views.login_cancelled, name="socialaccount_login_cancelled"),
    path("accounts/sso/error/", views.login_error, name="socialaccount_login_error"),
    path("accounts/sso/signup/", views.signup, name="socialaccount_signup"),
    # allauth's pages name its own sign-in, sign-up and inactive-account pages: each is Momor's
    # sign-in page (allauth signs nobody up with a password; an inactive account signs in nowhere)
    *[
        path(f"accounts/sso/{page}/", RedirectView.as_view(pattern_name="login"), name=name)
        for page, name in [
            ("sign-in", "account_login"),
            ("sign-up", "account_signup"),
            ("inactive", "account_inactive"),
        ]
    ],
    path("sso/", pages.single_sign_on, name="single-sign-on"),
    path("sso/policy/", pages.sign_in_policy, name="sso-policy"),
    path("sso/domains/<int:pk>/remove/", pages.domain_remove, name="sso-domain-remove"),
    path("sso/domains/<int:pk>/check/", pages.domain_check, name="sso-domain-check"),
]
