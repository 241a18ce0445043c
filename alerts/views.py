"""The Alerts page of owners and admins: the rules, the webhook endpoints (each one's secret
shown once, when it is made or rolled; a test event sent on demand), what fired lately, and
each endpoint's deliveries with every try and its answer."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.acting import audited_on
from accounts.models import Membership, Role
from accounts.permissions import role_required
from alerts.endpoints import endpoint_made, secret_rolled
from alerts.forms import RuleForm, WebhookForm
from alerts.models import AlertEvent, AlertRule, Delivery, WebhookEndpoint
from alerts.trial import trial_event

RECENT = 20


@role_required(Role.ADMIN)
def alerts_page(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = membership.organization
    form = RuleForm(request.POST or None, organization=org)
    if request.method == "POST" and form.is_valid():
        with audited_on(request, "create") as change:
            change.obj = rule = form.save()
        messages.success(request, f"Rule added: {rule.get_kind_display()} {rule}.")
        return redirect("alerts")
    return _page(request, membership, rule_form=form)


@require_POST
@role_required(Role.ADMIN)
def rule_remove(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    rule = get_object_or_404(AlertRule, organization=membership.organization, pk=pk)
    with audited_on(request, "delete", rule):
        rule.delete()
    messages.success(request, "Rule removed.")
    return redirect("alerts")


@require_POST
@role_required(Role.ADMIN)
def webhook_add(request: HttpRequest, membership: Membership) -> HttpResponse:
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _page(request, membership, webhook_form=form)
    data = form.cleaned_data
    endpoint, secret = endpoint_made(membership.organization, data["url"], data["description"])
    with audited_on(request, "create") as change:
        endpoint.save()
        change.obj = endpoint
    return _page(request, membership, shown=(endpoint, secret))


@require_POST
@role_required(Role.ADMIN)
def webhook_secret(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = _endpoint(membership, pk)
    with audited_on(request, "roll secret", endpoint):
        secret = secret_rolled(endpoint)
    return _page(request, membership, shown=(endpoint, secret))


@require_POST
@role_required(Role.ADMIN)
def webhook_remove(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = _endpoint(membership, pk)
    with audited_on(request, "delete", endpoint):
        endpoint.delete()
    messages.success(request, f"{endpoint.url} removed: nothing more is sent to it.")
    return redirect("alerts")


@require_POST
@role_required(Role.ADMIN)
def webhook_test(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = _endpoint(membership, pk)
    with audited_on(request, "send test", endpoint):
        trial_event(endpoint, request.user.get_username())
    messages.success(request, "A test event is on its way: its delivery shows below.")
    return redirect("alert-webhook", pk=endpoint.pk)


@role_required(Role.ADMIN)
def webhook_page(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    endpoint = _endpoint(membership, pk)
    deliveries = (
        Delivery.objects.filter(endpoint=endpoint)
        .select_related("event")
        .prefetch_related("tries")[:50]
    )
    return render(request, "alerts/webhook.html", {"endpoint": endpoint, "deliveries": deliveries})


def _endpoint(membership: Membership, pk: int) -> WebhookEndpoint:
    return get_object_or_404(WebhookEndpoint, organization=membership.organization, pk=pk)


def _page(
    request: HttpRequest,
    membership: Membership,
    *,
    rule_form: RuleForm | None = None,
    webhook_form: WebhookForm | None = None,
    shown: tuple[WebhookEndpoint, str] | None = None,
) -> HttpResponse:
    org = membership.organization
    context: dict[str, Any] = {
        "rules": org.alert_rules.all(),
        "endpoints": org.webhooks.all(),
        "events": AlertEvent.objects.filter(organization=org).prefetch_related(
            "deliveries__endpoint"
        )[:RECENT],
        "rule_form": rule_form or RuleForm(organization=org),
        "webhook_form": webhook_form or WebhookForm(),
        "shown": shown,
    }
    failed = (rule_form is not None and rule_form.errors) or (
        webhook_form is not None and webhook_form.errors
    )
    return render(request, "alerts/alerts.html", context, status=400 if failed else 200)
