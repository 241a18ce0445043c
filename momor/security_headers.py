"""The Content-Security-Policy of every page Django answers (the members' UI, the admin, the
management API's docs): scripts from Momor's own origin alone (htmx, Chart.js and Swagger UI
are files under static/vendor/, the pages' own scripts under static/js/; no inline script or
handler), styles from it and inline (the admin's and the libraries' own), images from it and
data URLs, connections (fetch, the live feed's websocket) to it, no plugins, no framing, forms
posting to it alone. An answer that set its own policy keeps it.

Read by the settings too (the default policy, the proxy's header), so it imports little."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.deprecation import MiddlewareMixin

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicy(MiddlewareMixin):
    """Sync and async alike (MiddlewareMixin): the async views run without a thread hop."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        policy = settings.MOMOR_CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


def proxy_ssl_header(text: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto: https` as Django's SECURE_PROXY_SSL_HEADER reads it
    (`("HTTP_X_FORWARDED_PROTO", "https")`); None for an empty text."""
    if not text.strip():
        return None
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or not value.strip():
        raise ImproperlyConfigured("MOMOR_PROXY_SSL_HEADER reads 'Header-Name: value'")
    meta = "HTTP_" + name.strip().upper().replace("-", "_")
    return meta, value.strip()
