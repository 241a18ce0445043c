from __future__ import annotations

from django.urls import path

from alerts import views

urlpatterns = [
    path("alerts/", views.alerts_page, name="alerts"),
    path("alerts/rules/<int:pk>/remove/", views.rule_remove, name="alert-rule-remove"),
    path("alerts/webhooks/", views.webhook_add, name="alert-webhook-add"),
    path("alerts/webhooks/<int:pk>/", views.webhook_page, name="alert-webhook"),
    path("alerts/webhooks/<int:pk>/test/", views.webhook_test, name="alert-webhook-test"),
    path("alerts/webhooks/<int:pk>/secret/", views.webhook_secret, name="alert-webhook-secret"),
    path("alerts/webhooks/<int:pk>/remove/", views.webhook_remove, name="alert-webhook-remove"),
]
