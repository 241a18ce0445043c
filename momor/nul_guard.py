"""Django's own pages, the operators' admin and the sign-in, password and reset pages under
/accounts/, refuse a NUL character in a request's path, query or form fields with a 400 before
any of their views reads them. PostgreSQL's text holds none, and those views look rows up by
what they are sent (a username, a model's id, a choice, a search), so a NUL reached the
database as a query and came back as a DataError: a 500. The members' UI and the management
API check their own fields, naming the one refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpResponseBadRequest
from django.utils.deprecation import MiddlewareMixin

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase, QueryDict

NUL = "\x00"
REFUSED = "A value holds a NUL character, which Momor cannot store."


GUARDED = ("/admin/", "/accounts/")


class NulGuard(MiddlewareMixin):
    """Sync and async alike (MiddlewareMixin): the async views run without a thread hop."""

    def process_request(self, request: HttpRequest) -> HttpResponseBase | None:
        if not request.path.startswith(GUARDED):
            return None
        if NUL in request.path or _holds_nul(request.GET) or _holds_nul(request.POST):
            return HttpResponseBadRequest(REFUSED, content_type="text/plain")
        return None


def _holds_nul(values: QueryDict) -> bool:
    return any(NUL in key or any(NUL in v for v in values.getlist(key)) for key in values)
