"""Generations: a filtered list paged by cursor (with the live feed), one generation with its
attempts, and the CSV export of the filtered list, streamed (its rows and columns:
billing.usage.exports)."""

from __future__ import annotations

from typing import Any

from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from accounts.field_bounds import has_nul
from accounts.models import Membership, Role
from accounts.permissions import role_required
from accounts.views.helpers import is_htmx
from billing.models import Attempt, Generation, GenerationQuerySet
from billing.usage.exports import export_name, generations_csv
from billing.usage.keyset import keyset_page
from billing.usage.reads import seen_values
from billing.views.forms import GenerationFilterForm


def _filter_form(request: HttpRequest, membership: Membership) -> GenerationFilterForm:
    org_id = membership.organization_id
    return GenerationFilterForm(
        request.GET,
        models=seen_values(org_id, "model"),
        providers=seen_values(org_id, "provider"),
    )


def _criteria(form: GenerationFilterForm) -> dict[str, Any] | None:
    """The filters the form holds; None when it does not validate (it shows why)."""
    if not form.is_valid():
        return None
    return {name: value for name, value in form.cleaned_data.items() if value}


def _rows(membership: Membership, criteria: dict[str, Any] | None) -> GenerationQuerySet:
    rows = Generation.objects.for_org(membership.organization_id)
    if criteria is None:
        return rows.none()
    return rows.filtered(**criteria).order_by("-created_at", "-pk")


def _status(request: HttpRequest, criteria: dict[str, Any] | None) -> int:
    """400 for filters that do not validate; htmx swaps in a 200 only, so a filter picked on
    the page shows its error there."""
    return 400 if criteria is None and not is_htmx(request) else 200


@role_required(Role.MEMBER)
def generation_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = _filter_form(request, membership)
    criteria = _criteria(form)
    page = keyset_page(
        _rows(membership, criteria),
        25,
        before=request.GET.get("before"),
        after=request.GET.get("after"),
    )
    query = request.GET.copy()
    for cursor in ("before", "after", "page"):
        query.pop(cursor, None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "live": page.is_first and criteria == {},
    }
    template = "billing/_generations_table.html" if is_htmx(request) else "billing/generations.html"
    return render(request, template, context, status=_status(request, criteria))


@role_required(Role.MEMBER)
def generation_detail(
    request: HttpRequest, membership: Membership, request_id: str
) -> HttpResponse:
    if has_nul(request_id):
        raise Http404
    generation = get_object_or_404(
        Generation.objects.select_related("api_key", "user"),
        organization=membership.organization,
        request_id=request_id,
    )
    context = {"g": generation, "attempts": Attempt.objects.of(generation)}
    return render(request, "billing/generation.html", context)


@role_required(Role.MEMBER)
def generation_export(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = _filter_form(request, membership)
    criteria = _criteria(form)
    if criteria is None:
        return HttpResponseBadRequest(_refusal(form), content_type="text/plain")
    response = StreamingHttpResponse(
        generations_csv(_rows(membership, criteria)), content_type="text/csv"
    )
    name = export_name(membership.organization.slug, timezone.now())
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response  # type: ignore[return-value]  # streamed: no HttpResponse, but served as one


def _refusal(form: GenerationFilterForm) -> str:
    """One line per refused filter, named by its query parameter."""
    return "".join(
        f"{name}: {' '.join(map(str, errors))}\n" for name, errors in form.errors.items()
    )
