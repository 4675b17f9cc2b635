"""Each word of the vocabulary is written once, and everything else reads it from there.

``Mode`` (how a schema is sent) and the finish reasons the client acts on live in
``sdk/_backend.py``; the provider names in the provider registry. A second spelling (a ``Literal``
or a tuple of the same words, a bare ``"length"`` compared with a finish reason) would drift
from the first; the scans below find one anywhere in ``sdk/``.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import sdk
from sdk import _backend
from sdk._backend import FINISH_REASONS, GenerationRequest, Mode
from sdk._cli._args import build_parser
from sdk._options import _MODES

SDK = Path(sdk.__file__).parent
HOME = SDK / "_backend.py"


def _sources() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(SDK.rglob("*.py"))
        if path != HOME
    ]


def _strings(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_the_modes_are_read_from_backend() -> None:
    assert GenerationRequest.__annotations__["mode"] == "Mode"  # the alias, not a copy
    assert _MODES == get_args(Mode)
    mode = next(a for a in build_parser()._actions if a.dest == "mode")
    assert mode.choices is not None
    assert list(mode.choices) == [m for m in get_args(Mode) if m != "none"]


def _copies(tree: ast.Module, vocabulary: set[str]) -> list[int]:
    """Lines that define the vocabulary again: a ``Literal`` of two of its words or more (a
    type), or a tuple, list or set of all of them but one at most (a list of choices). A
    membership test of two words (``mode in ("json_schema", "tool")``) is a use, not a copy."""
    lines = []
    for node in ast.walk(tree):
        literal = (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Literal"
        )
        display = isinstance(node, (ast.Tuple, ast.List, ast.Set))
        held = len(_strings(node) & vocabulary) if literal or display else 0
        if (literal and held >= 2) or (display and held >= len(vocabulary) - 1):
            lines.append(node.lineno)
    return lines


def test_no_other_module_lists_the_modes_or_the_finish_reasons() -> None:
    words = {"Mode": set(get_args(Mode)), "finish reasons": set(FINISH_REASONS)}
    found = [
        f"{path.relative_to(SDK)}:{line} lists the {name}"
        for path, tree in _sources()
        for name, vocabulary in words.items()
        for line in _copies(tree, vocabulary)
    ]
    assert found == []
    # The scan can fail: a second Literal of the modes, or a tuple of the reasons, is found.
    sample = ast.parse(
        'M = Literal["json_schema", "tool"]\nR = ("stop", "length", "tool_calls", "content_filter")'
    )
    assert _copies(sample, words["Mode"]) == [1]
    assert _copies(sample, words["finish reasons"]) == [2]


def _finish_reason_spots(tree: ast.Module) -> list[tuple[int, str]]:
    """Bare finish-reason strings where a finish reason is meant: compared with a name that
    says ``finish`` or ``reason``, passed as ``finish_reason=`` / ``reason=``, or a value of a
    table of stop reasons (a dict whose values are all finish-reason words)."""
    reasons = set(FINISH_REASONS)
    spots: list[tuple[int, str]] = []

    def bare(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.IfExp):
            return bare(node.body) or bare(node.orelse)
        if isinstance(node, ast.Constant) and node.value in reasons:
            return str(node.value)
        return None

    def about_reasons(node: ast.AST) -> bool:
        names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
        names += [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
        return any("finish" in n.lower() or "reason" in n.lower() for n in names)

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                word = bare(side)
                if word and any(about_reasons(o) for o in sides if o is not side):
                    spots.append((node.lineno, word))
        elif isinstance(node, ast.keyword) and node.arg in ("finish_reason", "reason"):
            if word := bare(node.value):
                spots.append((node.value.lineno, word))
        elif isinstance(node, ast.Dict) and node.values:
            values = [bare(v) for v in node.values]
            if all(values):
                spots.extend((v.lineno, str(w)) for v, w in zip(node.values, values, strict=True))
        elif isinstance(node, ast.Assign) and about_reasons(node.targets[0]):
            if word := bare(node.value):
                spots.append((node.lineno, word))
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            func = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if "finish" in func.lower():
                spots.extend((a.lineno, w) for a in node.args if (w := bare(a)))
    return spots


def test_finish_reasons_are_named_not_spelled() -> None:
    found = [
        f"{path.relative_to(SDK)}:{line} {word!r}"
        for path, tree in _sources()
        for line, word in _finish_reason_spots(tree)
    ]
    assert found == [], "spell these as sdk._backend's STOP / LENGTH / TOOL_CALLS / CONTENT_FILTER"


def test_the_scan_finds_a_bare_finish_reason() -> None:
    # The scan itself can fail: each form it looks for, written bare, is found.
    sample = ast.parse(
        "if finish_reason == 'length': pass\n"
        "Delta(finish_reason='stop')\n"
        "TABLE = {'end_turn': 'stop', 'max_tokens': 'length'}\n"
        "self._finish(pieces, 'length')\n"
        "reason = 'tool_calls'\n"
        "reason = 'tool_calls' if calls else None\n"
    )
    found = sorted(w for _, w in _finish_reason_spots(sample))
    assert found == ["length", "length", "length", "stop", "stop", "tool_calls", "tool_calls"]
    assert (_backend.STOP, _backend.LENGTH) == ("stop", "length")
