"""The shape of the tree: at the top of `gateway/` and `billing/` sits nothing but packages and
the app's face (`apps`, `models`, `admin`, `urls`); everything else lives in a package named
for what it holds (docs/architecture.md, "Packages and layers")."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FACE = {"__init__", "apps", "models", "admin", "urls"}


@pytest.mark.parametrize("app", ["gateway", "billing"])
def test_only_the_apps_face_and_packages_sit_at_its_top(app: str) -> None:
    top = ROOT / app
    others = sorted(
        entry.name
        for entry in top.iterdir()
        if entry.is_file() and entry.suffix == ".py" and entry.stem not in FACE
    )
    assert others == []
    packages = [
        entry for entry in top.iterdir() if entry.is_dir() and (entry / "__init__.py").exists()
    ]
    assert packages, f"{app}/ holds no package: the test looks at the wrong place"
