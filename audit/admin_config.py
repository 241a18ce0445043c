"""Django's admin with every registered model audited (`audit.admin_site.AuditedAdminSite`).
Named in INSTALLED_APPS in place of `django.contrib.admin`."""

from __future__ import annotations

from django.contrib.admin.apps import AdminConfig


class AuditedAdminConfig(AdminConfig):
    default_site = "audit.admin_site.AuditedAdminSite"
