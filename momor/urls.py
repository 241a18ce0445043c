"""The root URLs: the admin, the management API, then each app's own pages and routes, and
`/static/` when Momor serves it itself."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path

from accounts.signin import throttled
from gateway.ops.page import operations
from momor import static

admin.site.site_header = "Momor administration"
admin.site.site_title = "Momor admin"
admin.site.index_title = "Catalog, organizations and records"
# The lists need the page's width at 1280 px; the index and breadcrumbs lead everywhere.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("admin/login/", throttled(admin.site.login)),
    path("admin/operations/", admin.site.admin_view(operations), name="operations"),
    path("admin/", admin.site.urls),
    path("api/manage/", include("momor.api_urls")),
    path("", include("gateway.urls")),
    path("", include("accounts.sso.urls")),
    path("", include("accounts.urls")),
    path("", include("billing.urls")),
    path("", include("alerts.urls")),
]

if settings.MOMOR_SERVE_STATIC:
    # A route on /static/ alone, so the middleware chain of the completions endpoint stays
    # async (WhiteNoise's middleware is sync-only).
    urlpatterns.append(re_path(r"^static/(?P<path>.+)$", static.static_file, name="static"))
