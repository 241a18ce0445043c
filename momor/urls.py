from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from accounts.signin import throttled

urlpatterns = [
    path("admin/login/", throttled(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/manage/", include("momor.api_urls")),
    path("", include("gateway.urls")),
    path("", include("accounts.urls")),
]
