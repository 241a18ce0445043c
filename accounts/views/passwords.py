"""Django's password change and password reset pages, each change they make audited."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views
from django.http import HttpResponse

from accounts.acting import audited_on
from audit.actors import Actor


class PasswordChange(views.PasswordChangeView):
    def form_valid(self, form: Any) -> HttpResponse:
        with audited_on(self.request, "change_password", form.user):
            return super().form_valid(form)


class PasswordResetConfirm(views.PasswordResetConfirmView):
    def form_valid(self, form: Any) -> HttpResponse:
        with audited_on(self.request, "reset_password", form.user) as change:
            change.actor = Actor.member(form.user)
            return super().form_valid(form)
