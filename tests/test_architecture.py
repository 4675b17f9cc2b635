"""``docs/architecture.md`` stays true: what it names exists, and its claims about the code hold.

The document is the map a newcomer reads before the code; each test here checks one kind of
claim it makes, against the code itself (paths, ``Class.attribute`` names, where the shared
defaults and the vocabulary live), so a change that makes the map wrong fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
CODE = ("sdk", "partial")


def _ticked() -> list[str]:
    return re.findall(r"`([^`\n]+)`", DOC)


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for base in CODE:
        for path in sorted((ROOT / base).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _members(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute):
                names.add(target.attr)
    return names


def test_every_path_it_names_exists() -> None:
    paths = {
        t for t in _ticked() if re.fullmatch(r"(sdk|partial|tests|docs|examples|\.ci)/[\w./-]+", t)
    }
    assert len(paths) > 50  # the document names the code by path; the pattern finds them
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_every_class_attribute_it_names_exists() -> None:
    classes: dict[str, set[str]] = {}
    for _, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, set()).update(_members(node))
    named = {t.removesuffix("()") for t in _ticked() if re.fullmatch(r"[A-Z]\w*\.\w+(\(\))?", t)}
    named -= {"README.md"}
    assert len(named) > 10
    wrong = sorted(n for n in named if n.split(".")[1] not in classes.get(n.split(".")[0], set()))
    assert wrong == [], f"docs/architecture.md names members that do not exist: {wrong}"


def test_a_default_read_by_several_modules_lives_in_constants() -> None:
    # "the defaults several entry points share ..., each written once | sdk/_constants.py":
    # a DEFAULT_* defined in another module must be that module's alone (imported by none).
    assert "the defaults several entry points share" in DOC
    defined: dict[str, str] = {}
    imported: dict[str, set[str]] = {}
    for path, tree in _modules():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                arithmetic = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)
                literal = node.value is not None and all(
                    isinstance(part, arithmetic) for part in ast.walk(node.value)
                )
                for target in targets:
                    # A value built from other names (an httpx.Timeout of the constants) is
                    # not a second home; a number or string written here is.
                    if (
                        isinstance(target, ast.Name)
                        and target.id.startswith("DEFAULT_")
                        and literal
                    ):
                        defined[f"{module}.{target.id}"] = module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    imported.setdefault(f"{node.module}.{alias.name}", set()).add(module)
    assert "sdk._constants.DEFAULT_MAX_RETRIES" in defined
    shared_elsewhere = {
        name: sorted(imported[name])
        for name in defined
        if not name.startswith("sdk._constants.") and imported.get(name)
    }
    assert shared_elsewhere == {}, f"shared defaults outside sdk/_constants.py: {shared_elsewhere}"
