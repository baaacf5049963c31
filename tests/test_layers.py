"""The house: no import runs upward. The methods (and what they stand on) never import the campaign, the report or
the command line; the campaign (assay.eval) never imports the command line (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"
BELOW = ["siren", "autoeval.py", "psdme", "faq", "quickscope", "compare", "models", "data", "stats", "benchmarks",
         "results.py", "seeds.py", "errors.py", "checks.py", "parallel.py"]
#: what each layer may not import
FORBIDDEN = {**{name: ("eval", "cli", "report", "studies") for name in BELOW}, "eval": ("cli", "studies"),
             "report": ("cli", "eval")}


def _imports(path: Path) -> set[str]:
    """The assay subpackages a module imports (relative or absolute), at any depth of the module."""
    return _imports_of(path.read_text(), path.relative_to(SRC).parts)


def _imports_of(text: str, pkg: tuple[str, ...]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg[:-node.level])  # the package the relative import starts from
                parts = base + (node.module.split(".") if node.module else [])
                top = parts[0] if parts else (node.names[0].name if node.names else "")
                if not parts:  # "from .. import x": x is the subpackage
                    out.update(a.name for a in node.names)
                else:
                    out.add(top)
                    if len(parts) == 1 and parts[0] == pkg[0] and node.module is None:
                        out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("assay."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("assay."))
    return {m.removesuffix(".py") for m in out}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_import_runs_upward(layer):
    files = [SRC / layer] if layer.endswith(".py") else sorted((SRC / layer).rglob("*.py"))
    assert files and all(f.exists() for f in files)
    bad = {str(f.relative_to(SRC)): sorted(_imports(f) & set(FORBIDDEN[layer])) for f in files}
    assert not {k: v for k, v in bad.items() if v}, bad


def test_the_checker_sees_upward_imports():
    # the check can fail: relative and absolute imports of the CLI from inside the campaign are seen
    where = ("eval", "campaign.py")
    assert "cli" in _imports_of("from ..cli import app\n", where)
    assert "cli" in _imports_of("def f():\n    from ..cli._common import out\n", where)
    assert "cli" in _imports_of("import assay.cli\n", where)
    assert "cli" in _imports_of("from .. import cli\n", where)
    assert not _imports_of("from .spec import Campaign\n", where) - {"eval"}
