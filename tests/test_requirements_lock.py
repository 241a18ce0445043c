"""requirements.lock, what deployments install from, covers pyproject.toml: every runtime
dependency (and what its extras name) is pinned to a version its specifier accepts, and every
pin carries hashes, so `pip install --require-hashes` takes nothing else. After a change of
the dependencies, `bash scripts/lock_requirements.sh` writes it again."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
# What the dependencies' extras bring (celery[redis], redis[hiredis], ...), by name.
EXTRAS = {
    ("celery", "redis"): ["redis"],
    ("redis", "hiredis"): ["hiredis"],
    ("uvicorn", "standard"): ["httptools", "uvloop", "websockets", "watchfiles"],
    ("psycopg", "binary"): ["psycopg-binary"],
    ("google-auth", "requests"): ["requests"],
}


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def pinned() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = PIN.match(line)
        if match:
            found[canonicalize_name(match.group(1))] = match.group(2)
    return found


def test_every_runtime_dependency_is_pinned_to_a_version_it_accepts() -> None:
    pins = pinned()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: run scripts/lock_requirements.sh"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, pyproject.toml asks {requirement}"
        )
        for extra in requirement.extras:
            for brought in EXTRAS.get((name, extra), []):
                assert brought in pins, f"{brought} ({name}[{extra}]) is not in requirements.lock"


def test_every_pin_carries_hashes() -> None:
    text = (ROOT / "requirements.lock").read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 3)[3])
    assert len(entries) == len(pinned())
    for entry in entries:
        assert "--hash=sha256:" in entry, entry.splitlines()[0]
