"""The start of a sign-in through an identity provider: allauth's, which reads the provider's
discovery document first; a provider that cannot be reached then (a requests error, an
OSError) is answered with the sign-in failure page and a 502, not a server error. Its page
(a GET asks before going on) posts to the provider too, so it admits their origins as the
sign-in page does."""

from __future__ import annotations

import logging

from allauth.socialaccount.providers.openid_connect import views
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

from accounts.sso.form_action import admits_identity_providers

log = logging.getLogger(__name__)


@admits_identity_providers
def start(request: HttpRequest, provider_id: str) -> HttpResponseBase:
    try:
        response: HttpResponseBase = views.login(request, provider_id)
    except OSError as exc:
        log.warning("identity provider %s could not be reached: %s", provider_id, exc)
        return unreachable(request)
    return response


def unreachable(request: HttpRequest) -> HttpResponse:
    return render(request, "socialaccount/authentication_error.html", status=502)
