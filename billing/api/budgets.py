"""Management API for the organization's budgets (owners and admins, and management keys):
list them with what each has spent in its current window, set one (a key's, a member's, or
the organization's, for a period), change its amount, lift it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import Manager, QuerySet
from django.utils import timezone
from rest_framework import generics, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.acting import audited_on
from accounts.api_auth import HasOrganization, ManagementKeyAuthentication, access_on
from accounts.budgets import budget_of, budget_owner, budget_set
from accounts.models import Budget, BudgetPeriod, Role
from accounts.services import AccountError
from billing.ledger.budget_spend import meter_of, spent_now_many
from core.formatting import money

AUTH = [ManagementKeyAuthentication, SessionAuthentication]


class BudgetPage(serializers.ListSerializer[Budget]):
    """A list of budgets whose spend is read for all of them at once."""

    spent: dict[int, Decimal]

    def to_representation(self, data: Any) -> list[Any]:
        budgets = list(data.all() if isinstance(data, Manager | QuerySet) else data)
        self.spent = spent_now_many(budgets)
        return super().to_representation(budgets)


class BudgetSerializer(serializers.ModelSerializer[Budget]):
    """A budget and where it stands in its current window: `spent` as the stored records
    hold it (calls under way and those not stored yet are not in it)."""

    key = serializers.IntegerField(source="api_key_id", read_only=True)
    member = serializers.IntegerField(source="member_id", read_only=True)

    class Meta:
        list_serializer_class = BudgetPage
        model = Budget
        fields = ["id", "scope", "key", "member", "period", "amount"]
        read_only_fields = fields

    def to_representation(self, instance: Budget) -> dict[str, Any]:
        page = self.parent
        spent = page.spent if isinstance(page, BudgetPage) else spent_now_many([instance])
        used = spent[instance.pk]
        resets = meter_of(instance, timezone.now()).window.resets_at
        return {
            **super().to_representation(instance),
            "spent": money(used),
            "remaining": money(max(instance.amount - used, Decimal(0))),
            "resets_at": resets.isoformat().replace("+00:00", "Z") if resets else None,
        }


class BudgetInput(serializers.Serializer[Any]):
    """A budget to set: a key's (`key`), a member's (`member`, their user id), or with neither
    the organization's."""

    key = serializers.IntegerField(required=False, allow_null=True)
    member = serializers.IntegerField(required=False, allow_null=True)
    period = serializers.ChoiceField(choices=BudgetPeriod.choices)
    amount = serializers.DecimalField(max_digits=18, decimal_places=9, min_value=0)


class BudgetAmount(serializers.Serializer[Any]):
    amount = serializers.DecimalField(max_digits=18, decimal_places=9, min_value=0)


class BudgetList(generics.ListAPIView[Budget]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = BudgetSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[Budget]:
        return Budget.objects.filter(organization=access_on(self.request).organization)

    def post(self, request: Request) -> Response:
        """Set a budget: made (201), or its amount changed where the scope has one for the
        period (200)."""
        form = BudgetInput(data=request.data)
        form.is_valid(raise_exception=True)
        org = access_on(request).organization
        data = form.validated_data
        try:
            api_key, member = budget_owner(org, data.get("key"), data.get("member"))
            existing = budget_of(org, data["period"], api_key, member)
            with audited_on(request, "set", existing) as change:
                budget, made = budget_set(
                    organization=org, period=data["period"], amount=data["amount"],
                    api_key=api_key, member=member,
                )  # fmt: skip
                change.obj = budget
        except AccountError as exc:
            return Response({"detail": str(exc)}, status=400)
        answer = status.HTTP_201_CREATED if made else status.HTTP_200_OK
        return Response(BudgetSerializer(budget).data, status=answer)


class BudgetDetail(generics.RetrieveUpdateDestroyAPIView[Budget]):
    """A budget; PATCH changes its amount, DELETE lifts it."""

    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = BudgetSerializer
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Budget]:
        return Budget.objects.filter(organization=access_on(self.request).organization)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        budget = self.get_object()
        form = BudgetAmount(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            with audited_on(request, "update", budget):
                budget, _ = budget_set(
                    organization=budget.organization, period=budget.period,
                    amount=form.validated_data["amount"], api_key=budget.api_key,
                    member=budget.member,
                )  # fmt: skip
        except AccountError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(BudgetSerializer(budget).data)

    def perform_destroy(self, instance: Budget) -> None:
        with audited_on(self.request, "delete", instance):
            instance.delete()
