"""Management API for the organization's API keys: list, create (the secret shown once),
update limits, revoke. Members see and manage their own keys; admins and management keys,
all of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Manager, QuerySet
from rest_framework import generics, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.acting import audited_on
from accounts.api_auth import Access, HasOrganization, ManagementKeyAuthentication, access_on
from accounts.field_bounds import INTEGER_MAX, day_in_range, day_range_text
from accounts.hooks import key_limits
from accounts.models import ApiKey, KeyKind, Role
from accounts.services import AccountError, NotAllowed, api_key_create, api_key_update

AUTH = [ManagementKeyAuthentication, SessionAuthentication]


class ApiKeyPage(serializers.ListSerializer[ApiKey]):
    """A list of keys whose OpenRouter fields are read for all of them at once."""

    limits: dict[int, dict[str, Any]]

    def to_representation(self, data: Any) -> list[Any]:
        keys = list(data.all() if isinstance(data, Manager | QuerySet) else data)
        self.limits = key_limits()(keys)
        return super().to_representation(keys)


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    revoked = serializers.SerializerMethodField()

    class Meta:
        list_serializer_class = ApiKeyPage
        model = ApiKey
        fields = [
            "id",
            "name",
            "kind",
            "prefix",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked",
            "credit_limit",
            "rate_limit",
        ]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked"]

    def get_revoked(self, key: ApiKey) -> bool:
        return key.revoked_at is not None

    def to_representation(self, instance: ApiKey) -> dict[str, Any]:
        """With OpenRouter's key fields: the key's tightest limit of its own and its usage (read
        for the whole page by `ApiKeyPage`, else for this key)."""
        page = self.parent
        limits = page.limits if isinstance(page, ApiKeyPage) else key_limits()([instance])
        return {**super().to_representation(instance), **limits[instance.pk]}


def _expiry_in_range(value: datetime | None) -> None:
    if value is not None and not day_in_range(value):
        raise serializers.ValidationError(f"An expiry {day_range_text()}.")


class _KeyLimitsSerializer(serializers.Serializer[Any]):
    """The limits of a key, each within its column: null is no limit of its own."""

    credit_limit = serializers.DecimalField(
        max_digits=18, decimal_places=9, min_value=0, required=False, allow_null=True
    )
    rate_limit = serializers.IntegerField(
        min_value=1, max_value=INTEGER_MAX, required=False, allow_null=True
    )
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, validators=[_expiry_in_range]
    )


class ApiKeyCreateSerializer(_KeyLimitsSerializer):
    name = serializers.CharField(max_length=100, required=False, default="")
    kind = serializers.ChoiceField(choices=KeyKind.choices, default=KeyKind.INFERENCE)


class ApiKeyUpdateSerializer(_KeyLimitsSerializer):
    """The fields a PATCH may change; a field left out stays as it is, null lifts a limit."""

    name = serializers.CharField(max_length=100, required=False, allow_blank=True)


def keys_for(access: Access) -> QuerySet[ApiKey]:
    keys = ApiKey.objects.filter(organization=access.organization)
    if not access.at_least(Role.ADMIN):
        keys = keys.filter(created_by_id=access.user_id)
    return keys


class ApiKeyList(generics.ListCreateAPIView[ApiKey]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    serializer_class = ApiKeySerializer

    def get_queryset(self) -> QuerySet[ApiKey]:
        return keys_for(access_on(self.request))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = ApiKeyCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        access = access_on(request)
        if form.validated_data["kind"] == KeyKind.MANAGEMENT and not access.at_least(Role.ADMIN):
            return Response({"detail": "Only admins create management keys."}, status=403)
        try:
            with audited_on(request, "create") as change:
                plain, key = _create(access, form.validated_data)
                change.obj = key
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=403)
        except AccountError as exc:
            return Response({"detail": str(exc)}, status=400)
        body = {**ApiKeySerializer(key).data, "key": plain}
        return Response(body, status=status.HTTP_201_CREATED)


def _create(access: Access, data: dict[str, Any]) -> tuple[str, ApiKey]:
    user = None
    if access.user_id is not None:
        user = get_user_model().objects.filter(pk=access.user_id).first()
    return api_key_create(
        organization=access.organization,
        name=data["name"],
        kind=data["kind"],
        created_by=user,
        credit_limit=data.get("credit_limit"),
        rate_limit=data.get("rate_limit"),
        expires_at=data.get("expires_at"),
        tighten_only=not access.at_least(Role.ADMIN),
        minted_by=access.key,
    )


class ApiKeyDetail(generics.RetrieveUpdateAPIView[ApiKey]):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[ApiKey]:
        return keys_for(access_on(self.request))

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        return ApiKeyUpdateSerializer if self.request.method == "PATCH" else ApiKeySerializer

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Members may only tighten their own keys' limits; admins change them freely; a
        management key tightens its own, and sets no expiry past its own."""
        key = self.get_object()
        form = ApiKeyUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        access = access_on(request)
        tighten_only = not access.at_least(Role.ADMIN)
        try:
            with audited_on(request, "update", key):
                api_key_update(
                    key=key,
                    tighten_only=tighten_only,
                    acting_key=access.key,
                    **form.validated_data,
                )
        except NotAllowed as exc:
            return Response({"detail": str(exc)}, status=403)
        except AccountError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(ApiKeySerializer(key).data)


class ApiKeyRevoke(APIView):
    authentication_classes = AUTH
    permission_classes = [HasOrganization]
    serializer_class = ApiKeySerializer

    def post(self, request: Request, pk: int) -> Response:
        key = keys_for(access_on(request)).filter(pk=pk).first()
        if key is None:
            return Response({"detail": "Not found."}, status=404)
        with audited_on(request, "revoke", key):
            key.revoke()
        return Response(ApiKeySerializer(key).data)
