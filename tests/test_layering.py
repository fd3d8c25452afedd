"""The layers run in a straight line: kgc.impl and kgc.spec know nothing of each other or of what
is above them; kgc.conformance knows both; kgc.tools (the command line, reports, benchmarks) is
the top, and nothing imports it.

Why an AST walk of our own and not import-linter: the rule is five lines, the packages are
mapped from top-level folders (impl/ -> kgc.impl), and the check must also see imports inside
functions (the CLI imports lazily), which a 40-line walk over the sources does exactly, with no
extra dependency to pin.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"impl": "kgc.impl", "spec": "kgc.spec", "conformance": "kgc.conformance", "tools": "kgc.tools"}
# what each layer may import from kgc (itself always)
ALLOWED = {
    "kgc.impl": set(),
    "kgc.spec": set(),
    "kgc.conformance": {"kgc.impl", "kgc.spec"},
    "kgc.tools": {"kgc.impl", "kgc.spec", "kgc.conformance"},
}


def kgc_imports(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, module) of every `import kgc...` / `from kgc... import` anywhere in the file."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "kgc"]
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] == "kgc"
        ):
            if node.module == "kgc":
                found += [(node.lineno, f"kgc.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and ".".join(parts[:2]) in ALLOWED else None


def violations(root: Path) -> list[str]:
    """Every import that runs against the layers, as `file:line: layer imports module`."""
    found = []
    for folder, layer in FOLDERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            for line, module in kgc_imports(path.read_text(encoding="utf-8"), str(path)):
                target = layer_of(module)
                if target is not None and target != layer and target not in ALLOWED[layer]:
                    found.append(f"{path.relative_to(root)}:{line}: {layer} imports {module}")
    return found


def test_imports_follow_the_layers() -> None:
    assert violations(ROOT) == []


@pytest.mark.parametrize(
    "folder, arrow",
    [
        ("impl", "from kgc.conformance.scenario import load_scenario"),
        ("impl", "import kgc.spec.tlc"),
        ("spec", "from kgc.impl.coordinator import GroupCoordinator"),
        ("conformance", "from kgc.tools.exit_codes import ExitCode"),
        ("spec", "from kgc import tools"),
    ],
)
def test_an_arrow_back_up_is_caught(tmp_path: Path, folder: str, arrow: str) -> None:
    """The checker on a copy of the sources with one backward import added, inside a function
    (where lazy imports hide)."""
    for name in FOLDERS:
        shutil.copytree(
            ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.tla", "*.cfg")
        )
    target = tmp_path / folder / "__init__.py"
    target.write_text(target.read_text() + f"\n\ndef _sneaky() -> None:\n    {arrow}\n")
    found = violations(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{folder}/__init__.py:"), found
