"""`manage.py load_catalog FILE.toml`: the loader's report on stdout, one-line refusals."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from gateway.models import Model, Offering
from tests.child_process import manage

ROOT = Path(__file__).resolve().parents[3]

CATALOG = """
[[providers]]
name = "mistral"
api = "mistral"
base_url = "https://api.mistral.ai/v1"
key_env = "MISTRAL_API_KEY"

[[models]]
id = "mistralai/mistral-small"
released = 2025-06-20
tiers = ["low"]

[[offerings]]
model = "mistralai/mistral-small"
provider = "mistral"
upstream_id = "mistral-small-2506"
prompt_price = 0.1
completion_price = 0.3
tools = true
"""

CREATED = (
    "providers: 1 created, 0 changed, 0 unchanged\n"
    "regions: 0 created, 0 changed, 0 unchanged\n"
    "models: 1 created, 0 changed, 0 unchanged\n"
    "offerings: 1 created, 0 changed, 0 unchanged\n"
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "catalog.toml"
    path.write_text(text)
    return path


def run(*args: str) -> str:
    out = StringIO()
    call_command("load_catalog", *args, stdout=out)
    return out.getvalue()


def refusal(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


@pytest.mark.django_db
def test_it_prints_one_line_per_kind(tmp_path: Path) -> None:
    assert run(str(write(tmp_path, CATALOG))) == CREATED
    assert Offering.objects.get().upstream_id == "mistral-small-2506"


@pytest.mark.django_db
def test_it_reports_everything_unchanged_the_second_time(tmp_path: Path) -> None:
    path = str(write(tmp_path, CATALOG))
    run(path)
    assert run(path) == (
        "providers: 0 created, 0 changed, 1 unchanged\n"
        "regions: 0 created, 0 changed, 0 unchanged\n"
        "models: 0 created, 0 changed, 1 unchanged\n"
        "offerings: 0 created, 0 changed, 1 unchanged\n"
    )


@pytest.mark.django_db
def test_it_refuses_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    assert refusal(str(missing)) == f"cannot read {missing}: No such file or directory"


@pytest.mark.django_db
def test_it_refuses_an_invalid_catalog_with_the_loaders_message(tmp_path: Path) -> None:
    path = write(tmp_path, CATALOG.replace('api = "mistral"', 'api = "le-chat"'))
    assert refusal(str(path)) == (
        "provider 'mistral': unknown api 'le-chat' (valid: openai, azure, mistral, deepinfra, "
        "anthropic, gemini, vertex, openai_compatible)"
    )
    assert not Offering.objects.exists()


@pytest.mark.django_db
def test_it_loads_the_shipped_default_catalog(tmp_path: Path) -> None:
    assert run(str(ROOT / "gateway" / "catalog" / "default.toml")) == (
        "providers: 7 created, 0 changed, 0 unchanged\n"
        "regions: 4 created, 0 changed, 0 unchanged\n"
        "models: 29 created, 0 changed, 0 unchanged\n"
        "offerings: 58 created, 0 changed, 0 unchanged\n"
    )


@pytest.mark.django_db(transaction=True)
def test_a_real_run_loads_the_file_and_exits_zero(tmp_path: Path) -> None:
    done = manage("load_catalog", str(write(tmp_path, CATALOG)))
    assert (done.returncode, done.stdout, done.stderr) == (0, CREATED, "")
    assert Offering.objects.get().upstream_id == "mistral-small-2506"


@pytest.mark.django_db(transaction=True)
def test_a_real_run_on_a_bad_file_exits_non_zero_with_one_line_and_no_traceback(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, CATALOG + "[[models]\n")
    done = manage("load_catalog", str(path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"CommandError: invalid TOML in {path}: "
        "Expected ']]' at the end of an array declaration (at line 20, column 9)\n"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (
            "prompt_price = 0.1",
            "prompt_price = -0.8",
            "offering 'mistralai/mistral-small' on 'mistral': 'prompt_price' must not be negative",
        ),
        (
            'tiers = ["low"]',
            'tiers = ["low"]\ncontext_length = 4294967296',
            "model 'mistralai/mistral-small': 'context_length' must be at most 2147483647",
        ),
        (
            'tiers = ["low"]',
            'tiers = "low"',
            "model 'mistralai/mistral-small': 'tiers' must be a list of strings",
        ),
        (
            "tools = true",
            'reasoning_efforts = ["ultra"]',
            "offering 'mistralai/mistral-small' on 'mistral': unknown reasoning effort 'ultra' "
            "(valid: none, minimal, low, medium, high, xhigh)",
        ),
    ],
    ids=["negative-price", "count-beyond-column", "tiers-string", "effort"],
)
def test_a_real_run_refuses_a_bad_field_in_one_line_and_loads_nothing(
    tmp_path: Path, old: str, new: str, line: str
) -> None:
    done = manage("load_catalog", str(write(tmp_path, CATALOG.replace(old, new))))
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"CommandError: {line}\n")
    assert not Model.objects.exists()
    assert not Offering.objects.exists()


@pytest.mark.django_db
def test_keep_existing_creates_what_is_missing_and_leaves_the_operators_edits(
    tmp_path: Path,
) -> None:
    path = str(write(tmp_path, CATALOG))
    run(path)
    Model.objects.filter(id="mistralai/mistral-small").update(name="Edited in the admin")
    Offering.objects.update(prompt_price="0.2", enabled=False)
    added = CATALOG + '\n[[models]]\nid = "mistralai/mistral-large"\nreleased = 2025-07-01\n'
    assert run(str(write(tmp_path, added)), "--keep-existing") == (
        "providers: 0 created, 0 changed, 1 unchanged\n"
        "regions: 0 created, 0 changed, 0 unchanged\n"
        "models: 1 created, 0 changed, 1 unchanged\n"
        "offerings: 0 created, 0 changed, 1 unchanged\n"
    )
    assert Model.objects.get(id="mistralai/mistral-small").name == "Edited in the admin"
    assert Model.objects.filter(id="mistralai/mistral-large").exists()
    offering = Offering.objects.get()
    assert (str(offering.prompt_price), offering.enabled) == ("0.200000", False)
