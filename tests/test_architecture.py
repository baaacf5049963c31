"""The map is the territory (docs/architecture.md, issue 52): every module and every command is on it, every room
imports only what its row allows, no private name crosses a room, and function bodies and modules stay within the
limits the map states. Each check is shown failing on a made-up case, so it can fail."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from test_layers import _imports_of

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "assay"
DOC = (ROOT / "docs" / "architecture.md").read_text()
#: modules that may stay over the module limit for now (the map says so)
WAITING = {"benchmarks/dyval.py", "models/runner.py", "faq/factor.py"}
BODY_LIMIT, BODIES_OVER, BODY_MAX, MODULE_LIMIT = 80, 12, 120, 900


def _rooms() -> dict[str, tuple[set[str], set[str]]]:
    """room -> (its modules, the rooms it may import), read from the map's table of rooms."""
    table = DOC[DOC.index("## The rooms"):DOC.index("## Which method builds on which")]
    out = {}
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = [n.strip("/") for n in re.findall(r"`([^`]+)`", cells[0])]
        modules = set(re.findall(r"`([\w.]+)`", cells[1]))
        allowed = set(re.findall(r"`([\w]+)`", cells[3]))
        if "every room" in cells[3] or "every method" in cells[3]:
            allowed |= {"*"} if "every room" in cells[3] else METHODS
        for n in names:
            out[n] = (modules, allowed)
    return out


METHODS = {"siren", "autoeval", "psdme", "faq", "quickscope", "compare", "audit"}


def _room_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


def test_every_module_is_on_the_map():
    rooms = _rooms()
    missing = []
    for p in _modules():
        room = _room_of(p)
        if room not in rooms:
            missing.append(f"room {room}")
            continue
        modules = rooms[room][0]
        rel = p.relative_to(SRC)
        if len(rel.parts) > 1 and p.stem != "__init__" and p.stem not in modules and rel.parts[-2] not in modules:
            missing.append(str(rel))
    assert not missing, f"not on docs/architecture.md: {missing}"


def test_every_command_is_on_the_map():
    import typer.main

    from assay.cli import app

    def names(cmd, pre=""):
        for n, sub in getattr(cmd, "commands", {}).items():
            if getattr(sub, "commands", None):
                yield from names(sub, f"{pre}{n} ")
            else:
                yield f"{pre}{n}"

    commands = DOC[DOC.index("## Commands"):]
    found = list(names(typer.main.get_command(app)))
    assert len(found) >= 18
    missing = [c for c in found if f"`assay {c}" not in commands]
    assert not missing, f"commands not on docs/architecture.md: {missing}"


def _imported_rooms(path: Path) -> set[str]:
    rooms = set(_rooms())
    return {r for r in _imports_of(path.read_text(), path.relative_to(SRC).parts) if r in rooms}


def test_every_room_imports_only_what_the_map_allows():
    rooms = _rooms()
    bad = {}
    for p in _modules():
        room = _room_of(p)
        if room == "__init__" or room not in rooms:
            continue
        allowed = rooms[room][1]
        if "*" in allowed:
            continue
        extra = _imported_rooms(p) - allowed - {room}
        if extra:
            bad[str(p.relative_to(SRC))] = sorted(extra)
    assert not bad, f"imports the map does not allow: {bad}"


def _private_imports(text: str, parts: tuple[str, ...]) -> list[str]:
    """Names starting with one underscore imported from another room (or from a private module of one)."""
    here = parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            target = list(parts[:-node.level]) + (node.module.split(".") if node.module else [])
        elif node.module and node.module.startswith("assay."):
            target = node.module.split(".")[1:]
        else:
            continue
        top = (target[0] if target else None)
        for a in node.names:
            room = (top or a.name).removesuffix(".py")
            private = (a.name.startswith("_") and not a.name.startswith("__")) or any(
                t.startswith("_") and not t.startswith("__") and t != "_version" for t in target)
            if private and room != here:
                out.append(f"{'.'.join(target)}.{a.name}")
    return out


def test_no_private_name_crosses_a_room():
    assert _private_imports("from ..faq.fit import _factors\n", ("compare", "live.py")) == ["faq.fit._factors"]
    assert not _private_imports("from .fit import _factors\n", ("faq", "posterior.py"))
    bad = {str(p.relative_to(SRC)): found for p in _modules()
           if (found := _private_imports(p.read_text(), p.relative_to(SRC).parts))}
    assert not bad, bad


def _bodies(text: str) -> list[tuple[int, str]]:
    """(lines, name) of every function body, its docstring not counted."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                if len(body) == 1:
                    continue
                body = body[1:]
            out.append((node.end_lineno - body[0].lineno + 1, node.name))
    return out


def test_bodies_and_modules_stay_within_their_limits():
    assert _bodies('def f():\n    """doc"""\n    a = 1\n    b = 2\n') == [(2, "f")]
    bodies = [(n, f"{p.relative_to(SRC)}:{name}") for p in _modules() for n, name in _bodies(p.read_text())]
    over = sorted((b for b in bodies if b[0] > BODY_LIMIT), reverse=True)
    assert len(over) <= BODIES_OVER, f"{len(over)} bodies over {BODY_LIMIT} lines: {over}"
    assert not [b for b in over if b[0] > BODY_MAX], over
    big = {str(p.relative_to(SRC)): n for p in _modules()
           if (n := len(p.read_text().splitlines())) > MODULE_LIMIT and str(p.relative_to(SRC)) not in WAITING}
    assert not big, f"modules over {MODULE_LIMIT} lines: {big}"


@pytest.mark.parametrize("room", sorted(METHODS | {"stats", "data", "models"}))
def test_each_room_of_the_lower_floors_has_a_row(room):
    assert room in _rooms()
