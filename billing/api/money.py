"""Management API for the organization's money and records: balance and open reservations
(admins), the ledger (admins), generations with filters (every member), all paginated by
cursor."""

from __future__ import annotations

import time
from datetime import date, datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from redis.exceptions import RedisError
from rest_framework import generics, serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api_auth import HasOrganization, ManagementKeyAuthentication, access_on
from accounts.field_bounds import as_utc, day_in_range, day_range_text, has_nul
from accounts.models import Role
from billing.admission.operations import open_reservations, unposted
from billing.calls.cost import from_units, to_units
from billing.models import Attempt, Generation, GenerationApi, LedgerEntry
from billing.usage.lookup import generation_data
from core.formatting import money

AUTH = [ManagementKeyAuthentication, SessionAuthentication]


class NewestFirst(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500

    def decode_cursor(self, request: Request) -> Cursor | None:
        """DRF's cursor, refused as invalid (404, as DRF answers a cursor it cannot read) when
        its position is not a moment Momor takes: it goes into a query as it is."""
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        moment = _position(str(cursor.position))
        if moment is None:
            raise NotFound(self.invalid_cursor_message)
        return cursor._replace(position=str(moment))  # type: ignore[arg-type]  # the stub says int; DRF keeps text


def _position(text: str) -> datetime | None:
    try:
        moment = parse_datetime(text)
    except ValueError:
        return None
    if moment is None or timezone.is_naive(moment) or not day_in_range(moment):
        return None
    return as_utc(moment)


class LedgerEntrySerializer(serializers.ModelSerializer[LedgerEntry]):
    class Meta:
        model = LedgerEntry
        fields = ["id", "kind", "amount", "balance_after", "note", "generation", "created_at"]


class GenerationSerializer(serializers.Serializer[Generation]):
    """A generation with its attempts, which the view reads for the whole page at once and
    hands over in the context (`attempts`, by generation id)."""

    def to_representation(self, instance: Generation) -> dict[str, Any]:
        return generation_data(instance, self.context["attempts"].get(instance.pk, []))


class HoldsUnknown(APIException):
    status_code = 503
    default_detail = (
        "The credits held by calls in flight cannot be read right now (Redis is unreachable); "
        "retry shortly."
    )
    default_code = "service_unavailable"


class Credits(APIView):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN

    def get(self, request: Request) -> Response:
        org = access_on(request).organization
        org.refresh_from_db(fields=["balance"])
        try:
            reservations = open_reservations(org.pk, int(time.time() * 1000))
            charges = unposted(org.pk)
        except RedisError:
            raise HoldsUnknown from None
        held = sum(reservations.values()) + sum(charges.values())
        return Response(
            {
                "balance": money(org.balance),
                "available": money(from_units(to_units(org.balance) - held)),
                "open_reservations": [
                    {"id": rid, "amount": money(from_units(units))}
                    for rid, units in sorted(reservations.items())
                ],
                "unposted_charges": money(from_units(sum(charges.values()))),
            }
        )


class Ledger(generics.ListAPIView[LedgerEntry]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = LedgerEntrySerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[LedgerEntry]:
        org = access_on(self.request).organization
        return LedgerEntry.objects.filter(organization=org)


class Generations(generics.ListAPIView[Generation]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    serializer_class = GenerationSerializer
    pagination_class = NewestFirst

    attempts: dict[int, list[Attempt]]

    def get_queryset(self) -> QuerySet[Generation]:
        org = access_on(self.request).organization
        return Generation.objects.for_org(org.pk).filtered(**_criteria(self.request.query_params))

    def paginate_queryset(self, queryset: Any) -> list[Any] | None:
        page = super().paginate_queryset(queryset)
        self.attempts = Attempt.objects.of_each(page or [])
        return page

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "attempts": getattr(self, "attempts", {})}


def _criteria(params: Any) -> dict[str, Any]:
    """The filters of a query: model, provider, status, session, app and API as given (the API
    one of Momor's); `since` and `until` as an ISO 8601 date or date and time (a time without
    an offset is in Momor's time zone)."""
    exact = ("model", "provider", "status", "session", "app", "api")
    criteria = {name: params[name] for name in exact if params.get(name)}
    for name, value in criteria.items():
        if has_nul(value):
            raise ValidationError({name: "A text without NUL characters."})
    if criteria.get("api", GenerationApi.CHAT) not in GenerationApi.values:
        raise ValidationError({"api": f"One of {', '.join(GenerationApi.values)}."})
    for name in ("since", "until"):
        if params.get(name):
            criteria[name] = _moment(name, params[name])
    return criteria


def _moment(name: str, text: str) -> date | datetime:
    try:
        # A date first: parse_datetime would read 2026-01-31 as its midnight.
        moment = parse_date(text) or parse_datetime(text)
    except ValueError:  # well formed, but no such day or time (2026-02-30)
        moment = None
    if moment is None:
        raise ValidationError(
            {name: "An ISO 8601 date, or date and time, such as 2026-01-31 or 2026-01-31T00:00Z."}
        )
    if not day_in_range(moment):
        raise ValidationError({name: f"A date or moment {day_range_text()}."})
    if isinstance(moment, datetime):
        return as_utc(timezone.make_aware(moment) if timezone.is_naive(moment) else moment)
    return moment
