"""The sign-in page's forms that start single sign-on post to Momor, which answers with a
redirect to the identity provider; a browser holds that redirect to the page's
Content-Security-Policy `form-action`, so the sign-in page's policy adds each identity
provider's origin (its issuer's) to it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from allauth.socialaccount.adapter import get_adapter
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

View = Callable[..., HttpResponseBase]


def admits_identity_providers(view: View) -> View:
    @functools.wraps(view)
    def with_policy(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        policy = settings.MOMOR_CONTENT_SECURITY_POLICY
        origins = _provider_origins(request)
        if policy and origins:
            response["Content-Security-Policy"] = with_form_action(policy, origins)
        return response

    return with_policy


def with_form_action(policy: str, origins: list[str]) -> str:
    """The policy with `origins` added to its form-action directive, if it has one."""
    directives = [directive.strip() for directive in policy.split(";")]
    return "; ".join(
        " ".join([directive, *origins]) if directive.split(" ")[0] == "form-action" else directive
        for directive in directives
    )


def _provider_origins(request: HttpRequest) -> list[str]:
    apps = get_adapter().list_apps(request, provider="openid_connect")
    urls = [urlsplit(app.settings["server_url"]) for app in apps]
    return sorted({f"{url.scheme}://{url.netloc}" for url in urls})
