"""Management API for the organization's alerts (owners and admins, and management keys): the
rules; the webhook endpoints (the signing secret in the answer that makes or rolls one, and
never again), a test event, each endpoint's deliveries with their tries; what fired."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from rest_framework import generics, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.acting import audited_on
from accounts.api_auth import HasOrganization, ManagementKeyAuthentication, access_on
from accounts.models import Role
from alerts.endpoints import endpoint_made, rule_problem, secret_rolled, url_problem
from alerts.models import AlertEvent, AlertRule, Delivery, DeliveryAttempt, WebhookEndpoint
from alerts.trial import trial_event
from billing.api.money import NewestFirst

AUTH = [ManagementKeyAuthentication, SessionAuthentication]


class RuleSerializer(serializers.ModelSerializer[AlertRule]):
    class Meta:
        model = AlertRule
        fields = ["id", "kind", "threshold", "email", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators: list[Any] = []  # the organization's uniqueness is checked in validate

    threshold = serializers.DecimalField(max_digits=18, decimal_places=6, min_value=0)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        problem = rule_problem(self.context["organization"], attrs["kind"], attrs["threshold"])
        if problem:
            raise serializers.ValidationError({"threshold": problem})
        return attrs


class EndpointSerializer(serializers.ModelSerializer[WebhookEndpoint]):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "created_at"]
        read_only_fields = ["id", "created_at"]

    def validate_url(self, url: str) -> str:
        problem = url_problem(url)
        if problem:
            raise serializers.ValidationError(problem)
        return url


class TrySerializer(serializers.ModelSerializer[DeliveryAttempt]):
    class Meta:
        model = DeliveryAttempt
        fields = ["number", "at", "ok", "status_code", "answer", "error", "duration_ms"]


class DeliverySerializer(serializers.ModelSerializer[Delivery]):
    event = serializers.CharField(source="event.public_id")
    type = serializers.CharField(source="event.type")
    tries = TrySerializer(many=True)

    class Meta:
        model = Delivery
        fields = ["id", "event", "type", "channel", "status", "attempts", "next_attempt_at",
                  "created_at", "finished_at", "tries"]  # fmt: skip


class EventSerializer(serializers.ModelSerializer[AlertEvent]):
    id = serializers.CharField(source="public_id")
    rule = serializers.IntegerField(source="rule_id", allow_null=True)

    class Meta:
        model = AlertEvent
        fields = ["id", "type", "rule", "summary", "data", "created_at"]


def org_id(request: Request) -> int:
    return int(access_on(request).organization.pk)


class RuleList(generics.ListCreateAPIView[AlertRule]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = RuleSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[AlertRule]:
        return AlertRule.objects.filter(organization_id=org_id(self.request))

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(),
                "organization": access_on(self.request).organization}  # fmt: skip

    def perform_create(self, serializer: serializers.BaseSerializer[AlertRule]) -> None:
        with audited_on(self.request, "create") as change:
            change.obj = serializer.save(organization_id=org_id(self.request))


class RuleDetail(generics.RetrieveDestroyAPIView[AlertRule]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = RuleSerializer

    def get_queryset(self) -> QuerySet[AlertRule]:
        return AlertRule.objects.filter(organization_id=org_id(self.request))

    def perform_destroy(self, instance: AlertRule) -> None:
        with audited_on(self.request, "delete", instance):
            instance.delete()


class EndpointList(generics.ListCreateAPIView[WebhookEndpoint]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = EndpointSerializer
    pagination_class = None

    def get_queryset(self) -> QuerySet[WebhookEndpoint]:
        return WebhookEndpoint.objects.filter(organization_id=org_id(self.request))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Add an endpoint: the answer carries its signing `secret`, shown this once."""
        form = EndpointSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        organization = access_on(request).organization
        endpoint, secret = endpoint_made(organization, data["url"], data.get("description", ""))
        with audited_on(request, "create") as change:
            endpoint.save()
            change.obj = endpoint
        answer = {**EndpointSerializer(endpoint).data, "secret": secret}
        return Response(answer, status=status.HTTP_201_CREATED)


class EndpointDetail(generics.RetrieveDestroyAPIView[WebhookEndpoint]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = EndpointSerializer

    def get_queryset(self) -> QuerySet[WebhookEndpoint]:
        return WebhookEndpoint.objects.filter(organization_id=org_id(self.request))

    def perform_destroy(self, instance: WebhookEndpoint) -> None:
        with audited_on(self.request, "delete", instance):
            instance.delete()


class EndpointSecret(EndpointDetail):
    """POST: a new signing secret, in the answer this once; deliveries are signed with it."""

    http_method_names = ["post", "options"]

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        endpoint = self.get_object()
        with audited_on(request, "roll secret", endpoint):
            secret = secret_rolled(endpoint)
        return Response({**EndpointSerializer(endpoint).data, "secret": secret})


class EndpointTest(EndpointDetail):
    """POST: a `test` event to this endpoint alone, sent at once; its delivery is answered."""

    http_method_names = ["post", "options"]
    serializer_class = DeliverySerializer  # type: ignore[assignment]  # what POST answers

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        endpoint = self.get_object()
        with audited_on(request, "send test", endpoint):
            delivery = trial_event(endpoint, actor_name(request))
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class EndpointDeliveries(generics.ListAPIView[Delivery]):
    """The endpoint's deliveries, newest first, each with its tries and what came back."""

    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = DeliverySerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[Delivery]:
        endpoint = get_object_or_404(
            WebhookEndpoint, organization_id=org_id(self.request), pk=self.kwargs["pk"]
        )
        rows = Delivery.objects.filter(endpoint=endpoint)
        return rows.select_related("event").prefetch_related("tries")


class EventList(generics.ListAPIView[AlertEvent]):
    """What fired, newest first."""

    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    least_role = Role.ADMIN
    serializer_class = EventSerializer
    pagination_class = NewestFirst

    def get_queryset(self) -> QuerySet[AlertEvent]:
        return AlertEvent.objects.filter(organization_id=org_id(self.request))


def actor_name(request: Request) -> str:
    key = request.auth
    prefix = getattr(key, "prefix", None)
    return f"key {prefix}…" if prefix else str(request.user.get_username())
