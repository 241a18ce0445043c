"""The management API (`/api/manage/`) and its OpenAPI schema and docs page (signed-in members
and management keys alone)."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.api import ApiKeyDetail, ApiKeyList, ApiKeyRevoke
from alerts import api as alerts
from billing.api.budgets import BudgetDetail, BudgetList
from billing.api.money import Credits, Generations, Ledger

urlpatterns = [
    path("keys/", ApiKeyList.as_view(), name="api-keys"),
    path("keys/<int:pk>/", ApiKeyDetail.as_view(), name="api-key"),
    path("keys/<int:pk>/revoke/", ApiKeyRevoke.as_view(), name="api-key-revoke"),
    path("budgets/", BudgetList.as_view(), name="api-budgets"),
    path("budgets/<int:pk>/", BudgetDetail.as_view(), name="api-budget"),
    path("alerts/rules/", alerts.RuleList.as_view(), name="api-alert-rules"),
    path("alerts/rules/<int:pk>/", alerts.RuleDetail.as_view(), name="api-alert-rule"),
    path("alerts/webhooks/", alerts.EndpointList.as_view(), name="api-webhooks"),
    path("alerts/webhooks/<int:pk>/", alerts.EndpointDetail.as_view(), name="api-webhook"),
    path(
        "alerts/webhooks/<int:pk>/secret/",
        alerts.EndpointSecret.as_view(),
        name="api-webhook-secret",
    ),
    path("alerts/webhooks/<int:pk>/test/", alerts.EndpointTest.as_view(), name="api-webhook-test"),
    path(
        "alerts/webhooks/<int:pk>/deliveries/",
        alerts.EndpointDeliveries.as_view(),
        name="api-webhook-deliveries",
    ),
    path("alerts/events/", alerts.EventList.as_view(), name="api-alert-events"),
    path("credits/", Credits.as_view(), name="api-credits"),
    path("ledger/", Ledger.as_view(), name="api-ledger"),
    path("generations/", Generations.as_view(), name="api-generations"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # the split view serves the page's own script as a file (?script), not inline
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
