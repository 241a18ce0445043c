"""The adapters are pure: each of their modules imports, every adapter translates a call and a
stream, and their tests import, in a fresh interpreter with no Django settings, loading nothing
of Django's and nothing of Momor's beyond `gateway.providers`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PROVIDERS = ROOT / "gateway" / "providers"


def provider_modules() -> list[str]:
    found = []
    for path in sorted(PROVIDERS.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


# What the child reports: every module it loaded that is Django's or Momor's outside the
# adapters. Nothing is the only right answer.
LOADED_OUTSIDE = """
import sys
outside = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"django", "momor", "accounts", "billing", "rest_framework",
                              "channels", "celery"}
    or (name.startswith("gateway.") and not name.startswith("gateway.providers"))
)
print(",".join(outside))
"""

# The same for a test module, which may also load the fake upstream and the SSE decoder.
LOADED_DJANGO = """
import sys
print(",".join(sorted(name for name in sys.modules if name.split(".")[0] in {
    "django", "momor", "accounts", "billing", "rest_framework", "channels", "celery"})))
"""

TRANSLATE_EVERY_ADAPTER = """
from gateway.providers import REGISTRY
from gateway.providers.contract import Event, Target

body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16}
for stream in (False, True):
    target = Target(
        "https://upstream.example", "secret", "acme/model", "model-1", stream=stream,
        project="momor-test",
    )
    for api, adapter in sorted(REGISTRY.items()):
        prepared = adapter.prepare(body, target)
        assert prepared.url.startswith("https://upstream.example"), (api, prepared.url)
        adapter.stream().feed(Event("{}"))
"""


def run_bare(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with no Django settings module in its environment."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(  # noqa: S603 - our own interpreter, with code written here
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("module", provider_modules())
def test_an_adapter_module_imports_without_django(module: str) -> None:
    child = run_bare(f"import {module}\n{LOADED_OUTSIDE}")

    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "", f"{module} loaded {child.stdout.strip()}"


def test_every_adapter_translates_without_django() -> None:
    child = run_bare(f"{TRANSLATE_EVERY_ADAPTER}\n{LOADED_OUTSIDE}")

    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == ""


# The adapters' own tests: translation alone, so they need no Django either.
ADAPTER_TESTS = [
    "test_anthropic_translation",
    "test_gemini_translation",
    "test_embeddings_translation",
    "test_translation_fuzz",
    "test_reasoning",
    "test_contract",
    "test_responses_to_chat",
    "test_responses_answers",
]


@pytest.mark.parametrize("name", ADAPTER_TESTS)
def test_the_adapters_tests_import_without_django(name: str) -> None:
    child = run_bare(f"import tests.gateway.providers.{name}\n{LOADED_DJANGO}")

    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "", f"{name} loaded {child.stdout.strip()}"


def test_the_modules_are_found() -> None:
    modules = set(provider_modules())

    for name in ("anthropic", "openai", "vertex", "gemini.stream", "contract"):
        assert f"gateway.providers.{name}" in modules
