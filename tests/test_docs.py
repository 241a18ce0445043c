"""The README is the front door and docs/ holds one page per concern: the README stays short,
keeps its two commands and links every page; each page says what it covers before its first
section; every link between them lands on a file and a heading that exist; every environment
variable settings.py reads and every management command is in docs/operations.md; and every
module, file or function the README and docs/ name exists where they say it does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
TEXTS = [README, *PAGES]
TWO_COMMANDS = (
    "bash scripts/quickstart.sh   # run Momor on embedded defaults (SQLite, no Redis)",
    "bash scripts/test.sh         # run the whole test suite (PostgreSQL + Redis)",
)
TOP = ("accounts", "bench", "billing", "core", "gateway", "momor", "scripts", "testkit", "tests")
# Names the docs keep on purpose for what is not in the tree: a module a measurement's history
# names (since replaced), and two results of earlier runs that were never committed.
GONE = {
    "billing/admission/packing.py",
    "bench/results/durability/side-by-side-20261201.json",
    "bench/results/20261201-080437-session-side-by-side.json",
}
# Dotted names that are no modules: a logger's.
NOT_MODULES = {"momor.calls"}
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(rf"^(?:{'|'.join(TOP)})/[\w./-]*$")
DOTTED = re.compile(rf"^(?:{'|'.join(TOP)})(?:\.\w+)+$")


def prose(path: Path) -> str:
    """The page without its fenced code blocks (whose `# comment` lines are no headings)."""
    return FENCE.sub("", path.read_text())


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lowercase, punctuation dropped, spaces to -."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_the_readme_is_a_front_door_of_at_most_300_lines() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    for command in TWO_COMMANDS:
        assert command in text
    for page in PAGES:
        assert f"](docs/{page.name})" in text, f"the README does not link docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_says_what_it_covers_before_its_first_section(page: Path) -> None:
    before = prose(page).split("\n## ", 1)[0]
    title, *rest = before.strip().split("\n", 1)
    assert title.startswith("# ")
    assert len("".join(rest).split()) >= 20, f"{page.name} opens without saying what it covers"


@pytest.mark.parametrize("page", TEXTS, ids=lambda p: p.name)
def test_every_link_lands_on_a_file_and_a_heading(page: Path) -> None:
    for target in LINK.findall(prose(page)):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        landing = (page.parent / file).resolve() if file else page
        assert landing.exists(), f"{page.name} links {target}: no such file"
        if anchor and landing.suffix == ".md":
            assert anchor in anchors(landing), f"{page.name} links {target}: no such heading"


def _settings_variables() -> set[str]:
    settings = (ROOT / "momor" / "settings.py").read_text()
    return set(re.findall(r"env_\w+\(\s*\"([A-Z][A-Z0-9_]+)\"", settings))


def test_every_variable_settings_reads_is_in_the_operations_reference() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    variables = _settings_variables()
    assert {"MOMOR_SECRET_KEY", "DATABASE_URL", "MOMOR_METRICS_TOKEN"} <= variables
    assert sorted(v for v in variables if f"`{v}`" not in operations) == []


def test_every_management_command_is_in_the_operations_reference() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text()
    commands = {
        path.stem
        for path in ROOT.glob("*/management/commands/*.py")
        if not path.name.startswith("_")
    }
    assert "load_catalog" in commands
    assert sorted(c for c in commands if f"python manage.py {c}" not in operations) == []


def _module_file(parts: list[str]) -> tuple[Path | None, list[str]]:
    """The longest prefix of a dotted name that is a module or package, and what is left."""
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py"), parts[end:]
        if (base / "__init__.py").is_file():
            return base / "__init__.py", parts[end:]
    return None, parts


def _defines(module: Path, name: str) -> bool:
    pattern = rf"^(?:async def|def|class) {name}\b|^{name}\b\s*[:=]|\bimport\b.*\b{name}\b"
    return re.search(pattern, module.read_text(), re.M) is not None


@pytest.mark.parametrize("page", TEXTS, ids=lambda p: p.name)
def test_every_module_and_file_named_exists(page: Path) -> None:
    missing = []
    for name in CODE.findall(page.read_text()):
        name = re.sub(r"[:(].*$", "", name.strip())  # `billing/x.py:fn`, `org_key(org_id, ...)`
        if PATH.match(name) and "<" not in name and "*" not in name:
            if name not in GONE and not (ROOT / name).exists():
                missing.append(name)
        elif DOTTED.match(name) and name not in NOT_MODULES:
            module, rest = _module_file(name.split("."))
            if module is None or (rest and not _defines(module, rest[0])):
                missing.append(name)
    assert missing == [], f"{page.name} names what is not there"
