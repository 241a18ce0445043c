"""The catalog loader: the whole file is validated, then upserted by natural key, idempotently."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from gateway.catalog import DEFAULT_CATALOG, CatalogError, catalog_load
from gateway.models import Model, Offering, Provider, Region

pytestmark = pytest.mark.django_db

SMALL = """
[[providers]]
name = "openai"
api = "openai"
base_url = "https://api.openai.com/v1"
key_env = "OPENAI_API_KEY"
zdr = false

[[providers]]
name = "azure"
display_name = "Azure OpenAI"
api = "azure"
base_url = "https://momor.openai.azure.com/openai/v1"
key_env = "AZURE_OPENAI_API_KEY"
zdr = true

[[providers.regions]]
name = "eu"
base_url = "https://momor-eu.openai.azure.com/openai/v1"

[[models]]
id = "openai/gpt-5"
name = "GPT-5"
released = 2025-08-07
deprecated = false
tiers = ["high", "reasoning"]
auto = true
context_length = 400000
max_output_tokens = 128000

[[models]]
id = "openai/gpt-4o-mini"
released = 2024-07-18
tiers = ["low"]

[[offerings]]
model = "openai/gpt-5"
provider = "openai"
upstream_id = "gpt-5"
prompt_price = 1.25
completion_price = 10.0
cache_read_price = 0.125
tools = true
json_schema = true
reasoning_efforts = ["high", "minimal", "low", "medium"]
input_modalities = ["file", "image"]

[[offerings]]
model = "openai/gpt-5"
provider = "azure@eu"
upstream_id = "gpt-5"
prompt_price = 1.375
completion_price = 11

[[offerings]]
model = "openai/gpt-4o-mini"
provider = "openai"
upstream_id = "gpt-4o-mini"
prompt_price = 0.15
completion_price = 0.6
"""

PROVIDER = """
[[providers]]
name = "openai"
api = "openai"
base_url = "https://api.openai.com/v1"
"""
MODEL = """
[[models]]
id = "openai/gpt-5"
"""
OFFERING = """
[[offerings]]
model = "openai/gpt-5"
provider = "openai"
upstream_id = "gpt-5"
prompt_price = 1.25
completion_price = 10.0
"""
VALID = PROVIDER + MODEL + OFFERING


def load(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return catalog_load(path).lines()


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(CatalogError) as caught:
        load(tmp_path, text)
    return str(caught.value)


def report(providers: str, regions: str, models: str, offerings: str) -> list[str]:
    """report("2/0/0", ...) for 2 created, 0 changed, 0 unchanged."""
    counts = {"providers": providers, "regions": regions, "models": models}
    counts["offerings"] = offerings
    lines = []
    for kind, text in counts.items():
        created, changed, unchanged = text.split("/")
        lines.append(f"{kind}: {created} created, {changed} changed, {unchanged} unchanged")
    return lines


def test_it_creates_every_row_of_a_new_catalog(tmp_path: Path) -> None:
    assert load(tmp_path, SMALL) == report("2/0/0", "1/0/0", "2/0/0", "3/0/0")
    assert Provider.objects.count() == 2
    assert Region.objects.count() == 1
    assert Model.objects.count() == 2
    assert Offering.objects.count() == 3


def test_it_stores_providers_and_regions_as_written(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    azure = Provider.objects.get(name="azure")
    assert (azure.display_name, azure.api, azure.key_env, azure.zdr) == (
        "Azure OpenAI",
        "azure",
        "AZURE_OPENAI_API_KEY",
        True,
    )
    assert azure.base_url == "https://momor.openai.azure.com/openai/v1"
    assert [(r.name, r.base_url) for r in azure.regions.all()] == [
        ("eu", "https://momor-eu.openai.azure.com/openai/v1")
    ]
    assert Provider.objects.get(name="openai").display_name == ""


def test_it_stores_models_as_written_with_defaults_for_what_is_left_out(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    gpt5 = Model.objects.get(id="openai/gpt-5")
    assert (gpt5.name, gpt5.released, gpt5.deprecated, gpt5.tiers, gpt5.auto) == (
        "GPT-5",
        date(2025, 8, 7),
        False,
        ["high", "reasoning"],
        True,
    )
    assert (gpt5.context_length, gpt5.max_output_tokens) == (400000, 128000)
    mini = Model.objects.get(id="openai/gpt-4o-mini")
    assert (mini.name, mini.deprecated, mini.auto, mini.context_length) == ("", False, False, None)
    assert mini.max_output_tokens is None


def test_it_stores_exact_prices_and_capabilities_in_their_canonical_order(
    tmp_path: Path,
) -> None:
    load(tmp_path, SMALL)
    on_openai = Offering.objects.get(model_id="openai/gpt-5", provider__name="openai")
    assert on_openai.region is None
    assert on_openai.upstream_id == "gpt-5"
    assert on_openai.prompt_price == Decimal("1.25")
    assert on_openai.completion_price == Decimal("10")
    assert on_openai.cache_read_price == Decimal("0.125")
    assert on_openai.cache_write_price == Decimal(0)
    assert (on_openai.tools, on_openai.json_schema, on_openai.enabled) == (True, True, True)
    assert on_openai.reasoning_efforts == ["minimal", "low", "medium", "high"]
    assert on_openai.input_modalities == ["image", "file"]


def test_input_modalities_left_out_are_unset_and_empty_are_text_alone(tmp_path: Path) -> None:
    load(tmp_path, VALID)
    assert Offering.objects.get(model_id="openai/gpt-5").input_modalities is None
    load(tmp_path, VALID + "input_modalities = []\n")
    assert Offering.objects.get(model_id="openai/gpt-5").input_modalities == []


def test_it_places_an_offering_on_a_region(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    on_eu = Offering.objects.get(model_id="openai/gpt-5", provider__name="azure")
    assert on_eu.place == "azure@eu"
    assert (on_eu.prompt_price, on_eu.completion_price) == (Decimal("1.375"), Decimal(11))
    assert (on_eu.tools, on_eu.json_schema, on_eu.reasoning_efforts) == (False, False, [])


def test_a_second_load_of_the_same_file_changes_nothing(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    stamps = list(Offering.objects.order_by("pk").values_list("updated_at", flat=True))
    assert load(tmp_path, SMALL) == report("0/0/2", "0/0/1", "0/0/2", "0/0/3")
    assert list(Offering.objects.order_by("pk").values_list("updated_at", flat=True)) == stamps


def test_a_changed_price_is_exactly_one_change(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    changed = SMALL.replace("prompt_price = 0.15", "prompt_price = 0.2")
    assert load(tmp_path, changed) == report("0/0/2", "0/0/1", "0/0/2", "0/1/2")
    mini = Offering.objects.get(model_id="openai/gpt-4o-mini")
    assert mini.prompt_price == Decimal("0.2")


def test_it_reads_prices_through_their_text_so_no_float_error_creeps_in(tmp_path: Path) -> None:
    load(tmp_path, VALID.replace("prompt_price = 1.25", "prompt_price = 0.1"))
    assert Offering.objects.get().prompt_price == Decimal("0.1")
    assert load(tmp_path, VALID.replace("prompt_price = 1.25", "prompt_price = 0.1")) == report(
        "0/0/1", "0/0/0", "0/0/1", "0/0/1"
    )


def test_it_never_deletes_what_the_file_leaves_out(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    openai_alone = SMALL[: SMALL.index('[[providers]]\nname = "azure"')]
    assert load(tmp_path, openai_alone) == report("0/0/1", "0/0/0", "0/0/0", "0/0/0")
    assert (Provider.objects.count(), Region.objects.count()) == (2, 1)
    assert (Model.objects.count(), Offering.objects.count()) == (2, 3)


def test_an_offering_may_name_a_model_provider_and_region_already_stored(tmp_path: Path) -> None:
    load(tmp_path, SMALL)
    text = OFFERING.replace('"openai/gpt-5"', '"openai/gpt-4o-mini"').replace(
        'provider = "openai"', 'provider = "azure@eu"'
    )
    assert load(tmp_path, text) == report("0/0/0", "0/0/0", "0/0/0", "1/0/0")
    assert Offering.objects.get(model_id="openai/gpt-4o-mini", region__name="eu").upstream_id == (
        "gpt-5"
    )


def test_it_leaves_an_operators_switch_alone_unless_the_file_sets_enabled(
    tmp_path: Path,
) -> None:
    load(tmp_path, VALID)
    Offering.objects.update(enabled=False)
    assert load(tmp_path, VALID) == report("0/0/1", "0/0/0", "0/0/1", "0/0/1")
    assert Offering.objects.get().enabled is False
    assert load(tmp_path, VALID + "enabled = true\n") == report("0/0/1", "0/0/0", "0/0/1", "0/1/0")
    assert Offering.objects.get().enabled is True


def test_it_writes_nothing_when_any_part_of_the_file_is_invalid(tmp_path: Path) -> None:
    text = SMALL + OFFERING.replace('"openai/gpt-5"', '"openai/gpt-6"')
    assert refusal(tmp_path, text) == (
        "offering 'openai/gpt-6' on 'openai': unknown model 'openai/gpt-6'"
    )
    assert (Provider.objects.count(), Model.objects.count(), Offering.objects.count()) == (0, 0, 0)


def test_it_refuses_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.toml"
    with pytest.raises(CatalogError) as caught:
        catalog_load(missing)
    assert str(caught.value) == f"cannot read {missing}: No such file or directory"


def test_it_refuses_malformed_toml_naming_the_line(tmp_path: Path) -> None:
    text = PROVIDER + '\n[[models]\nid = "openai/gpt-5"\n'
    assert refusal(tmp_path, text) == (
        f"invalid TOML in {tmp_path / 'catalog.toml'}: "
        "Expected ']]' at the end of an array declaration (at line 7, column 9)"
    )


def test_it_refuses_an_unknown_adapter_kind(tmp_path: Path) -> None:
    assert refusal(tmp_path, PROVIDER.replace('api = "openai"', 'api = "bedrock"')) == (
        "provider 'openai': unknown api 'bedrock' (valid: openai, azure, mistral, deepinfra, "
        "anthropic, gemini, vertex, openai_compatible)"
    )


def test_it_refuses_an_offering_on_an_unknown_provider(tmp_path: Path) -> None:
    text = MODEL + OFFERING.replace('provider = "openai"', 'provider = "bedrock"')
    assert refusal(tmp_path, text) == (
        "offering 'openai/gpt-5' on 'bedrock': unknown provider 'bedrock'"
    )


def test_it_refuses_an_offering_on_an_unknown_region(tmp_path: Path) -> None:
    text = VALID.replace('provider = "openai"', 'provider = "openai@eu"')
    assert refusal(tmp_path, text) == (
        "offering 'openai/gpt-5' on 'openai@eu': unknown region 'openai@eu'"
    )


def test_it_refuses_an_offering_of_an_unknown_model(tmp_path: Path) -> None:
    assert refusal(tmp_path, PROVIDER + OFFERING) == (
        "offering 'openai/gpt-5' on 'openai': unknown model 'openai/gpt-5'"
    )


REGION = """
[[providers.regions]]
name = "eu"
base_url = "https://eu.example.com/v1"
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PROVIDER + PROVIDER, "duplicate provider 'openai'"),
        (PROVIDER + REGION + REGION, "provider 'openai': duplicate region 'eu'"),
        (MODEL + MODEL, "duplicate model 'openai/gpt-5'"),
        (VALID + OFFERING, "duplicate offering 'openai/gpt-5' on 'openai'"),
    ],
    ids=["provider", "region", "model", "offering"],
)
def test_it_refuses_a_duplicate(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(tmp_path, text) == message


@pytest.mark.parametrize("model_id", ["OpenAI/GPT-5", "gpt-5", "openai/gpt-5/extra", "openai/"])
def test_it_refuses_a_model_id_that_is_not_lowercase_publisher_slash_name(
    tmp_path: Path, model_id: str
) -> None:
    assert refusal(tmp_path, MODEL.replace("openai/gpt-5", model_id)) == (
        f"model '{model_id}': id must be publisher/name in lowercase letters, digits, "
        "'.', '-' or '_'"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PROVIDER.replace('name = "openai"\n', ""), "provider #1: missing required field 'name'"),
        (
            PROVIDER.replace('base_url = "https://api.openai.com/v1"\n', ""),
            "provider 'openai': missing required field 'base_url'",
        ),
        (
            PROVIDER + REGION.replace('name = "eu"\n', ""),
            "provider 'openai': region #1: missing required field 'name'",
        ),
        (MODEL.replace('id = "openai/gpt-5"\n', ""), "model #1: missing required field 'id'"),
        (
            VALID.replace("completion_price = 10.0\n", ""),
            "offering 'openai/gpt-5' on 'openai': missing required field 'completion_price'",
        ),
        (
            VALID.replace('upstream_id = "gpt-5"\n', ""),
            "offering 'openai/gpt-5' on 'openai': missing required field 'upstream_id'",
        ),
        (
            VALID.replace('provider = "openai"\n', ""),
            "offering #1: missing required field 'provider'",
        ),
        (
            PROVIDER.replace('api = "openai"', 'api = ""'),
            "provider 'openai': 'api' must not be empty",
        ),
    ],
    ids=[
        "provider-name",
        "provider-base-url",
        "region-name",
        "model-id",
        "completion-price",
        "upstream-id",
        "offering-provider",
        "empty-api",
    ],
)
def test_it_refuses_a_missing_required_field(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(tmp_path, text) == message


@pytest.mark.parametrize("field", ["prompt_price", "completion_price"])
def test_it_refuses_a_negative_price(tmp_path: Path, field: str) -> None:
    text = VALID.replace(f"{field} = ", f"{field} = -")
    assert refusal(tmp_path, text) == (
        f"offering 'openai/gpt-5' on 'openai': '{field}' must not be negative"
    )


def test_it_refuses_a_negative_cache_price(tmp_path: Path) -> None:
    assert refusal(tmp_path, VALID + "cache_write_price = -0.5\n") == (
        "offering 'openai/gpt-5' on 'openai': 'cache_write_price' must not be negative"
    )


def test_it_refuses_a_price_finer_than_the_database_keeps(tmp_path: Path) -> None:
    assert refusal(tmp_path, VALID.replace("1.25", "1.2500001")) == (
        "offering 'openai/gpt-5' on 'openai': 'prompt_price' has more than 6 decimal places"
    )


@pytest.mark.parametrize("value", ["nan", "inf", "100000000", "-0.8"])
def test_it_refuses_a_price_the_money_path_cannot_take(tmp_path: Path, value: str) -> None:
    message = refusal(tmp_path, VALID.replace("1.25", value))
    assert message == (
        "offering 'openai/gpt-5' on 'openai': 'prompt_price' must not be negative"
        if value.startswith("-")
        else "offering 'openai/gpt-5' on 'openai': 'prompt_price' must be a finite price under "
        "100000000"
    )
    assert not Offering.objects.exists()


@pytest.mark.parametrize("field", ["context_length", "max_output_tokens"])
def test_it_refuses_a_token_count_beyond_its_column(tmp_path: Path, field: str) -> None:
    assert refusal(
        tmp_path, VALID.replace("[[offerings]]", f"{field} = 2147483648\n\n[[offerings]]")
    ) == (f"model 'openai/gpt-5': '{field}' must be at most 2147483647")
    assert not Model.objects.exists()


def test_it_refuses_an_unknown_reasoning_effort(tmp_path: Path) -> None:
    assert refusal(tmp_path, VALID + 'reasoning_efforts = ["low", "extreme"]\n') == (
        "offering 'openai/gpt-5' on 'openai': unknown reasoning effort 'extreme' "
        "(valid: none, minimal, low, medium, high, xhigh)"
    )


def test_it_refuses_an_unknown_input_modality(tmp_path: Path) -> None:
    assert refusal(tmp_path, VALID + 'input_modalities = ["image", "video"]\n') == (
        "offering 'openai/gpt-5' on 'openai': unknown input modality 'video' "
        "(valid: image, audio, file)"
    )


def test_it_refuses_an_unknown_capability(tmp_path: Path) -> None:
    assert refusal(tmp_path, VALID + "vision = true\n") == (
        "offering 'openai/gpt-5' on 'openai': unknown field 'vision'"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            VALID + 'tools = "yes"\n',
            "offering 'openai/gpt-5' on 'openai': 'tools' must be true or false",
        ),
        (
            VALID.replace("1.25", '"1.25"'),
            "offering 'openai/gpt-5' on 'openai': "
            "'prompt_price' must be a number (USD per million tokens)",
        ),
        (
            MODEL + 'released = "2025-08-07"\n',
            "model 'openai/gpt-5': 'released' must be a date such as 2025-08-07",
        ),
        (MODEL + 'tiers = "high"\n', "model 'openai/gpt-5': 'tiers' must be a list of strings"),
        (
            MODEL + 'tiers = ["High"]\n',
            "model 'openai/gpt-5': tier 'High' must be lowercase letters, digits, - or _",
        ),
        (
            MODEL + "context_length = 0\n",
            "model 'openai/gpt-5': 'context_length' must be a positive whole number",
        ),
        (
            MODEL + "max_output_tokens = 1.5\n",
            "model 'openai/gpt-5': 'max_output_tokens' must be a positive whole number",
        ),
        (
            VALID + 'reasoning_efforts = ["low", "low"]\n',
            "offering 'openai/gpt-5' on 'openai': duplicate reasoning effort 'low'",
        ),
        (
            PROVIDER.replace("https://api.openai.com/v1", "api.openai.com"),
            "provider 'openai': 'base_url' must be an http or https URL, not 'api.openai.com'",
        ),
        (
            PROVIDER.replace('name = "openai"', 'name = "Open AI"'),
            "provider 'Open AI': name 'Open AI' must be lowercase letters, digits, - or _",
        ),
        (
            VALID.replace('provider = "openai"', 'provider = "openai@"'),
            "offering 'openai/gpt-5' on 'openai@': "
            "provider 'openai@' must be a provider name or name@region",
        ),
        (
            PROVIDER + "[providers.regions]\nname = 'eu'\n",
            "provider 'openai': 'regions' must be an array of tables ([[providers.regions]])",
        ),
        (
            "[providers]\nname = 'openai'\n",
            "'providers' must be an array of tables ([[providers]])",
        ),
        (PROVIDER + "[[provider]]\nname = 'x'\n", "unknown top-level key 'provider'"),
    ],
    ids=[
        "bool",
        "price",
        "date",
        "list",
        "tier",
        "count",
        "max-output",
        "duplicate-effort",
        "url",
        "name",
        "place",
        "regions-not-an-array",
        "not-an-array",
        "top-level",
    ],
)
def test_it_refuses_a_value_of_the_wrong_shape(tmp_path: Path, text: str, message: str) -> None:
    assert refusal(tmp_path, text) == message


def test_the_shipped_default_catalog_loads_cleanly() -> None:
    assert catalog_load(DEFAULT_CATALOG).lines() == report("7/0/0", "4/0/0", "29/0/0", "58/0/0")
    assert catalog_load(DEFAULT_CATALOG).lines() == report("0/0/7", "0/0/4", "0/0/29", "0/0/58")


def test_the_shipped_default_catalog_serves_every_model_it_lists() -> None:
    catalog_load(DEFAULT_CATALOG)
    assert not Model.objects.filter(offerings__isnull=True).exists()
    assert not Model.objects.filter(released__isnull=True).exists()
    assert not Model.objects.filter(deprecated=True, auto=True).exists()
    assert sorted(Provider.objects.filter(zdr=True).values_list("name", flat=True)) == [
        "azure",
        "vertex",
    ]


def test_the_shipped_default_catalog_prices_gpt_5_at_openais_list_price() -> None:
    catalog_load(DEFAULT_CATALOG)
    gpt5 = Offering.objects.get(model_id="openai/gpt-5", provider__name="openai")
    assert (gpt5.prompt_price, gpt5.completion_price) == (Decimal("1.25"), Decimal(10))
    assert gpt5.reasoning_efforts == ["minimal", "low", "medium", "high"]
    places = Offering.objects.filter(model_id="openai/gpt-5").select_related("provider", "region")
    assert sorted(offering.place for offering in places) == ["azure@eu", "azure@us", "openai"]


def test_the_shipped_default_catalog_gives_every_chat_model_its_maximum_output() -> None:
    catalog_load(DEFAULT_CATALOG)
    chat = Model.objects.filter(kind="chat")
    assert not chat.filter(max_output_tokens__isnull=True).exists()
    documented = dict(Model.objects.values_list("id", "max_output_tokens"))
    assert documented["openai/gpt-5"] == 128_000
    assert documented["anthropic/claude-sonnet-4-5"] == 64_000
    assert documented["google/gemini-2.5-pro"] == 65_536


def test_the_shipped_default_catalog_embeds_on_every_api_that_serves_embeddings() -> None:
    catalog_load(DEFAULT_CATALOG)
    embedding = Offering.objects.filter(model__kind="embedding").select_related("provider")
    assert {o.provider.api for o in embedding} == {
        "openai",
        "azure",
        "mistral",
        "gemini",
        "deepinfra",
    }
    assert all(o.completion_price == 0 and o.prompt_price > 0 for o in embedding)
    small = Offering.objects.get(model_id="openai/text-embedding-3-small", provider__name="openai")
    assert small.prompt_price == Decimal("0.02")


FILTER_FIELDS = """
[[providers]]
name = "azure"
api = "azure"
base_url = "https://momor.openai.azure.com/openai/v1"
collects_data = false
locations = ["EU", "US"]

[[providers.regions]]
name = "eu"
base_url = "https://momor-eu.openai.azure.com/openai/v1"
collects_data = true
locations = ["DE"]

[[models]]
id = "openai/gpt-5"

[[offerings]]
model = "openai/gpt-5"
provider = "azure@eu"
upstream_id = "gpt-5"
prompt_price = 1.25
completion_price = 10.0
parameters = ["temperature", "seed"]
quantization = "FP8"
"""


def test_it_stores_the_provider_filter_fields(tmp_path: Path) -> None:
    load(tmp_path, FILTER_FIELDS)
    azure = Provider.objects.get(name="azure")
    eu = Region.objects.get(name="eu")
    offering = Offering.objects.get()
    assert (azure.collects_data, azure.locations) == (False, ["EU", "US"])
    assert (eu.collects_data, eu.locations) == (True, ["DE"])
    assert (offering.parameters, offering.quantization) == (["temperature", "seed"], "fp8")


def test_left_out_a_provider_collects_and_a_region_follows_it(tmp_path: Path) -> None:
    load(tmp_path, VALID)
    assert Provider.objects.get().collects_data is True
    assert (Offering.objects.get().parameters, Offering.objects.get().quantization) == ([], "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PROVIDER + 'locations = ["E U"]\n', "location 'E U' must be letters"),
        (PROVIDER + "collects_data = 1\n", "'collects_data' must be"),
        (VALID + 'parameters = "temperature"\n', "'parameters' must be a list of strings"),
        (VALID + 'quantization = "fp 8"\n', "quantization 'fp 8' must be letters"),
    ],
)
def test_it_refuses_an_unreadable_filter_field(tmp_path: Path, text: str, message: str) -> None:
    assert message in refusal(tmp_path, text)


def test_the_shipped_default_catalog_declares_the_filter_fields() -> None:
    catalog_load(DEFAULT_CATALOG)
    assert sorted(Provider.objects.filter(collects_data=False).values_list("name", flat=True)) == [
        "azure",
        "deepinfra",
        "vertex",
    ]
    assert Region.objects.get(provider__name="azure", name="eu").locations == ["EU"]
    assert Offering.objects.filter(provider__name="anthropic", parameters=[]).count() == 0
    assert Offering.objects.exclude(quantization="").filter(provider__name="deepinfra").exists()


EMBEDDING = """
[[models]]
id = "openai/text-embedding-3-small"
kind = "embedding"

[[offerings]]
model = "openai/text-embedding-3-small"
provider = "openai"
upstream_id = "text-embedding-3-small"
prompt_price = 0.02
"""


def test_a_model_is_chat_unless_the_file_says_embedding(tmp_path: Path) -> None:
    load(tmp_path, VALID + EMBEDDING)
    kinds = dict(Model.objects.values_list("id", "kind"))
    assert kinds == {"openai/gpt-5": "chat", "openai/text-embedding-3-small": "embedding"}


def test_an_embedding_offering_is_priced_by_its_prompt_price_alone(tmp_path: Path) -> None:
    load(tmp_path, VALID + EMBEDDING)
    offering = Offering.objects.get(model_id="openai/text-embedding-3-small")
    assert (offering.prompt_price, offering.completion_price) == (Decimal("0.02"), Decimal(0))


@pytest.mark.parametrize("field", ["completion_price", "cache_read_price", "cache_write_price"])
def test_it_refuses_an_embedding_offering_with_another_price(tmp_path: Path, field: str) -> None:
    message = refusal(tmp_path, VALID + EMBEDDING + f"{field} = 0.5\n")
    assert message == (
        "offering 'openai/text-embedding-3-small' on 'openai': 'openai/text-embedding-3-small' "
        f"is an embedding model, priced by prompt_price alone: '{field}' must be 0 or left out"
    )


def test_an_embedding_model_already_stored_is_priced_as_one(tmp_path: Path) -> None:
    load(tmp_path, VALID + EMBEDDING)
    offering = EMBEDDING.split("[[offerings]]")[1]
    again = PROVIDER + "[[offerings]]" + offering + "completion_price = 1\n"
    assert "is an embedding model" in refusal(tmp_path, again)
    load(tmp_path, PROVIDER + "[[offerings]]" + offering.replace("0.02", "0.03"))
    assert Offering.objects.get(model_id="openai/text-embedding-3-small").prompt_price == Decimal(
        "0.03"
    )


def test_it_refuses_an_unknown_kind(tmp_path: Path) -> None:
    message = refusal(tmp_path, PROVIDER + MODEL + 'kind = "rerank"\n')
    assert message == "model 'openai/gpt-5': 'kind' must be one of chat, embedding"
