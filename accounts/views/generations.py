"""Generations: a filtered, paginated list (with the live feed), one generation with its
attempts, and the CSV export of the filtered list."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from accounts.forms import GenerationFilterForm
from accounts.models import Membership, Role
from accounts.permissions import role_required
from accounts.views.helpers import is_htmx
from billing.models import Generation
from billing.usage import GenerationFilter, generations_csv, generations_of, seen_values


def _filter_form(request: HttpRequest, membership: Membership) -> GenerationFilterForm:
    org_id = membership.organization_id
    return GenerationFilterForm(
        request.GET,
        models=seen_values(org_id, "model"),
        providers=seen_values(org_id, "provider"),
    )


def _filter(form: GenerationFilterForm) -> GenerationFilter:
    if not form.is_valid():
        return GenerationFilter()
    return GenerationFilter(**form.cleaned_data)


@role_required(Role.MEMBER)
def generation_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = _filter_form(request, membership)
    only = _filter(form)
    rows = generations_of(membership.organization_id, only)
    page = Paginator(rows, 25).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "live": page.number == 1 and only == GenerationFilter(),
    }
    template = "ui/_generations_table.html" if is_htmx(request) else "ui/generations.html"
    return render(request, template, context)


@role_required(Role.MEMBER)
def generation_detail(
    request: HttpRequest, membership: Membership, request_id: str
) -> HttpResponse:
    generation = get_object_or_404(
        Generation.objects.select_related("api_key", "user"),
        organization=membership.organization,
        request_id=request_id,
    )
    context = {"g": generation, "attempts": generation.attempts.all()}
    return render(request, "ui/generation.html", context)


@role_required(Role.MEMBER)
def generation_export(request: HttpRequest, membership: Membership) -> HttpResponse:
    rows = generations_of(membership.organization_id, _filter(_filter_form(request, membership)))
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response = HttpResponse("".join(generations_csv(rows)), content_type="text/csv")
    name = f"{membership.organization.slug}-generations-{stamp}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
