"""The import contracts (pyproject.toml, [tool.importlinter]) hold on the tree as it is, and
each of them fails on one import that breaks it: the tree is copied to a directory of the
test's own, one violating import is added to one module, and `lint-imports` must report that
contract broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("momor", "gateway", "alerts", "billing", "accounts", "audit", "core", "testkit",
            "tests", "bench")  # fmt: skip
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# contract id -> (module that gets the import, the import that breaks the contract)
VIOLATIONS = {
    "layers": ("core/formatting.py", "import accounts.models"),
    "no-tests-in-product": ("gateway/apps.py", "import testkit.fake_openai"),
    "pure-adapters": ("gateway/providers/openai.py", "import gateway.relay.sse"),
    "gateway-layers": ("gateway/routing/candidates.py", "import gateway.edge.completion"),
    "billing-layers": ("billing/admission/base.py", "import billing.recording.hand_off"),
    "admission-operations": ("billing/storing/store.py", "import billing.admission.local"),
    "acyclic-siblings": ("gateway/relay/attempts.py", "import gateway.relay.failover"),
}


def _python_only(directory: str, names: list[str]) -> set[str]:
    """Everything but packages and Python modules is left out of the copy."""
    return {
        name
        for name in names
        if name == "__pycache__" or not (name.endswith(".py") or Path(directory, name).is_dir())
    }


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=_python_only)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def lint_imports(tree: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    selected = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(  # noqa: S603 - the project's own lint-imports, on a copy of its tree
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", *selected],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_contract_is_kept_by_the_tree_as_it_is(tree: Path) -> None:
    checked = lint_imports(tree)

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"Contracts: {len(VIOLATIONS)} kept, 0 broken." in checked.stdout


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_each_contract_breaks_on_one_violating_import(tree: Path, contract: str) -> None:
    module, violation = VIOLATIONS[contract]
    path = tree / module
    original = path.read_text()
    path.write_text(f"{original}\n{violation}  # noqa: E402\n")
    try:
        checked = lint_imports(tree, contract)
    finally:
        path.write_text(original)

    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "Contracts: 0 kept, 1 broken." in checked.stdout
