"""Billing's pages of the members' UI: the overview at `/`, usage, generations and the ledger."""

from __future__ import annotations

from django.urls import path

from billing.views import generations, ledger, overview, usage

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("billing/", ledger.billing, name="billing"),
    path("usage/", usage.usage, name="usage"),
    path("generations/", generations.generation_list, name="generations"),
    path("generations/export.csv", generations.generation_export, name="generations-export"),
    path("generations/<str:request_id>/", generations.generation_detail, name="generation"),
]
