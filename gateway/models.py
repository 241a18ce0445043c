"""The provider catalog: providers and their regions, models, and the offerings that join them."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.views.decorators.debug import sensitive_variables

from accounts.models import deployment_salt
from accounts.secrets import decrypt_secret, encrypt_secret


class AdapterKind(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    AZURE = "azure", "Azure OpenAI"
    MISTRAL = "mistral", "Mistral"
    DEEPINFRA = "deepinfra", "DeepInfra"
    ANTHROPIC = "anthropic", "Anthropic"
    GEMINI = "gemini", "Google Gemini"
    VERTEX = "vertex", "Google Vertex AI"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible"


class Provider(models.Model):
    name = models.SlugField(unique=True, help_text="The root name used in provider.order/ignore.")
    display_name = models.CharField(max_length=100, blank=True)
    api = models.CharField(max_length=20, choices=AdapterKind.choices)
    base_url = models.URLField(max_length=500)
    key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Environment variable holding Momor's own key for this provider.",
    )
    key_encrypted = models.TextField(
        blank=True,
        editable=False,
        help_text="Momor's own key stored encrypted; it wins over key_env when set.",
    )
    zdr = models.BooleanField(
        default=False,
        help_text="Momor's own agreements with this provider cover zero data retention.",
    )
    collects_data = models.BooleanField(
        default=True,
        help_text="Unticked: the agreement keeps and trains on nothing "
        "(provider.data_collection: deny).",
    )
    locations = models.JSONField(
        default=list, blank=True, help_text='Where it serves, such as ["US"] (provider.regions).'
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        return self.display_name or self.get_api_display()

    @sensitive_variables("plain")
    def set_key(self, plain: str) -> None:
        self.key_encrypted = encrypt_secret(plain, salt=deployment_salt) if plain else ""

    def stored_key(self) -> str:
        return decrypt_secret(self.key_encrypted) if self.key_encrypted else ""


class Region(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="regions")
    name = models.SlugField()
    base_url = models.URLField(max_length=500)
    collects_data = models.BooleanField(
        null=True, blank=True, help_text="Left empty, as its provider says."
    )
    locations = models.JSONField(
        default=list, blank=True, help_text='Where it serves, such as ["EU", "DE"].'
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "name"], name="one_region_name")]
        ordering = ["provider__name", "name"]

    def __str__(self) -> str:
        return f"{self.provider.name}@{self.name}"


class ModelKind(models.TextChoices):
    CHAT = "chat", "Chat"
    EMBEDDING = "embedding", "Embedding"


class Model(models.Model):
    id = models.CharField(primary_key=True, max_length=200, help_text="publisher/name, lowercase")
    name = models.CharField(max_length=200, blank=True, help_text="A display name.")
    kind = models.CharField(
        max_length=12,
        choices=ModelKind.choices,
        default=ModelKind.CHAT,
        help_text="Chat models answer chat, Messages and Responses calls; embedding models "
        "answer embeddings calls, priced by prompt tokens alone.",
    )
    released = models.DateField(null=True, blank=True)
    deprecated = models.BooleanField(default=False)
    tiers = models.JSONField(default=list, blank=True)
    auto = models.BooleanField(default=False, help_text="The auto selector may pick it.")
    context_length = models.PositiveIntegerField(null=True, blank=True)
    max_output_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The most tokens one answer may hold (the provider's documented maximum "
        "output): what a call that sets no ceiling reserves.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id

    @property
    def publisher(self) -> str:
        return self.id.split("/", 1)[0]


def _price_field(help_text: str) -> models.DecimalField[Decimal, Decimal]:
    return models.DecimalField(
        max_digits=14, decimal_places=6, default=Decimal(0), help_text=help_text
    )


class Offering(models.Model):
    model = models.ForeignKey(Model, on_delete=models.CASCADE, related_name="offerings")
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="offerings")
    region = models.ForeignKey(
        Region, null=True, blank=True, on_delete=models.CASCADE, related_name="offerings"
    )
    upstream_id = models.CharField(max_length=200)
    prompt_price = _price_field("USD per million prompt tokens")
    completion_price = _price_field("USD per million completion tokens")
    cache_read_price = _price_field("USD per million cached prompt tokens read")
    cache_write_price = _price_field("USD per million prompt tokens written to cache")
    tools = models.BooleanField(default=False)
    json_schema = models.BooleanField(default=False)
    reasoning_efforts = models.JSONField(default=list, blank=True)
    input_modalities = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="Beyond text: image, audio, file; [] for text alone. "
        "Left blank: what the provider's API carries.",
    )
    parameters = models.JSONField(
        default=list,
        blank=True,
        help_text="The request parameters it takes (provider.require_parameters); "
        "empty: the OpenAI common set.",
    )
    quantization = models.CharField(max_length=40, blank=True, help_text="Such as fp8 or int4.")
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["model", "provider"],
                condition=models.Q(region__isnull=True),
                name="one_offering_per_provider",
            ),
            models.UniqueConstraint(
                fields=["model", "provider", "region"],
                condition=models.Q(region__isnull=False),
                name="one_offering_per_region",
            ),
        ]
        ordering = ["model_id", "provider__name"]

    def __str__(self) -> str:
        return f"{self.model_id} on {self.place}"

    @property
    def place(self) -> str:
        return f"{self.provider.name}@{self.region.name}" if self.region else self.provider.name
