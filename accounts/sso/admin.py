"""The operators' admin for single sign-on: organizations' e-mail domains, which an operator
verifies once the organization has shown it holds the domain, and sign-in policies.

Identity providers are configured in the environment, never in the database: allauth's own
pages for provider apps (whose client secrets it would store in plaintext) and for tokens are
taken off the admin."""

from __future__ import annotations

from allauth.socialaccount.models import SocialApp, SocialToken
from django.contrib import admin, messages
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.sso.models import EmailDomain, SignInPolicy

for model in (SocialApp, SocialToken):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(EmailDomain)
class EmailDomainAdmin(admin.ModelAdmin[EmailDomain]):
    list_display = ["domain", "organization", "role", "created_at", "verified_at"]
    list_filter = ["role", ("verified_at", admin.EmptyFieldListFilter)]
    search_fields = ["domain", "organization__slug", "organization__name"]
    raw_id_fields = ["organization"]
    readonly_fields = ["created_at", "verified_at"]
    actions = ["verify"]

    @admin.action(description="Verify the selected domains for their organizations")
    def verify(self, request: HttpRequest, queryset: QuerySet[EmailDomain]) -> None:
        for domain in queryset.filter(verified_at__isnull=True):
            try:
                with transaction.atomic():
                    domain.verify()
            except IntegrityError:
                self.message_user(
                    request,
                    f"{domain.domain} is already verified for another organization.",
                    messages.ERROR,
                )
            else:
                self.message_user(request, f"Verified {domain.domain} for {domain.organization}.")


@admin.register(SignInPolicy)
class SignInPolicyAdmin(admin.ModelAdmin[SignInPolicy]):
    list_display = ["organization", "sso_required"]
    list_filter = ["sso_required"]
    raw_id_fields = ["organization"]
