"""Values addressed by JSON paths -> one JSON text, written as they arrive (sans-I/O).

Some servers stream a JSON object not as text but as its leaves, each addressed by a JSON path
(RFC 9535) in document order: Vertex AI's ``functionCall.partialArgs`` (``{"jsonPath":
"$.recipe.steps[0]", "stringValue": "Preheat", "willContinue": true}``). The trackers read JSON
text, so :class:`PathWriter` turns such a stream back into the text of the object: it keeps the
containers open on the way to the last leaf and writes each value as it arrives, so that each
piece it returns is the document's next piece. A leaf is final in that text as early as the
wire allows: a number, a boolean or ``null`` at once; a string when a piece says that no more
follows (``more=False``), or when the next path arrives; a container when the first path
outside it arrives.

What the writer takes (each rule broken is a :class:`~sdk.PartialArgumentsError` that names the
path and says what was wrong):

- a path is ``$`` followed by ``.name`` or ``['name']`` (``["name"]``) members and ``[n]``
  indices (no wildcards, slices, filters or negative indices: each path names one value); the
  root is an object, so the first step is a member;
- paths go forward: a member not yet written in its object, the next index of its array (the
  first index 0); going back into a container that was left, a member written twice, or an
  index skipped is refused;
- a path keeps its type: a value cannot be put where a container was (nor the other way), an
  array's path cannot use a name nor an object's an index, and a string left open by its last
  piece (``more=True``) can only be continued with string pieces;
- at most :data:`MAX_DEPTH` steps (the parser's own default nesting limit).

The text is written once and never rescanned: each call costs the length of what it writes
(and of its path).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Final

from sdk._errors import PartialArgumentsError

__all__ = ["MAX_DEPTH", "PathStep", "PathWriter", "parse_json_path"]

MAX_DEPTH: Final = 512
"""The most steps a path may have (``partial.Parser``'s default ``max_depth``)."""

PathStep = str | int
"""One step of a path: a member's name or an array index."""

_SAFE_FLOAT: Final = (
    2.0**53
)  # integral doubles below this are written as integers, as JSON has them


class _PathError(ValueError):
    """A path that is not a path to one value (what is wrong with it)."""


def parse_json_path(text: str, *, max_depth: int = MAX_DEPTH) -> tuple[PathStep, ...]:
    """The steps of ``text``, a JSON path to one value (``$.a.b[0]``, ``$['a b'][2]``)."""
    try:
        return _parse(text, max_depth)
    except _PathError as exc:
        raise PartialArgumentsError(f"a JSON path: {_cut(text)!r}: {exc}", json_path=text) from None


def _parse(text: str, max_depth: int) -> tuple[PathStep, ...]:
    if not text.startswith("$"):
        raise _error(text, "a JSON path starts with '$'")
    steps: list[PathStep] = []
    i, n = 1, len(text)
    while i < n:
        if len(steps) >= max_depth:
            raise _error(text, f"the path is deeper than {max_depth} steps")
        c = text[i]
        if c == ".":
            j = i + 1
            while j < n and text[j] not in ".[":
                j += 1
            if j == i + 1:
                raise _error(text, f"an empty member name at character {i}")
            name = text[i + 1 : j]
            if name == "*":
                raise _error(text, "a wildcard names many values, not one")
            steps.append(name)
            i = j
        elif c == "[":
            if i + 1 < n and text[i + 1] in "'\"":
                name, i = _quoted(text, i + 1)
                steps.append(name)
            else:
                j = text.find("]", i)
                if j < 0:
                    raise _error(text, f"an unclosed '[' at character {i}")
                digits = text[i + 1 : j]
                if not digits.isascii() or not digits.isdigit() or digits != str(int(digits)):
                    raise _error(
                        text,
                        f"[{digits}] at character {i} is not an index to one value (a "
                        "non-negative integer without leading zeros)",
                    )
                steps.append(int(digits))
                i = j + 1
        else:
            raise _error(text, f"unexpected {c!r} at character {i} (expected '.' or '[')")
    return tuple(steps)


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The name in the quotes at ``start`` and where the step ends (after its ``]``)."""
    quote = text[start]
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        c = text[i]
        if c == quote:
            if i + 1 >= n or text[i + 1] != "]":
                raise _error(text, f"expected ']' after the quoted name at character {i + 1}")
            return "".join(out), i + 2
        if c == "\\":
            if i + 1 >= n:
                break
            e = text[i + 1]
            if e == "u":
                code = text[i + 2 : i + 6]
                if len(code) != 4 or not all(h in "0123456789abcdefABCDEF" for h in code):
                    raise _error(text, f"a bad \\u escape at character {i}")
                out.append(chr(int(code, 16)))
                i += 6
                continue
            simple = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/"}
            if e in simple:
                out.append(simple[e])
            elif e in "\\'\"":
                out.append(e)
            else:
                raise _error(text, f"a bad escape \\{e} at character {i}")
            i += 2
            continue
        out.append(c)
        i += 1
    raise _error(text, f"an unclosed quoted name at character {start}")


@dataclass(slots=True)
class _Open:
    """An open container: whether it is an array, its last child, the members it has."""

    array: bool
    last: PathStep | None = None
    keys: set[str] = field(default_factory=set)


class PathWriter:
    """Writes one JSON object from path-addressed values (see the module docstring). Each
    method returns the next piece of the text; :meth:`close` the last one. ``what`` names the
    document in error messages ("the arguments of call 0 (city)")."""

    def __init__(self, what: str = "the object", *, max_depth: int = MAX_DEPTH) -> None:
        self.what = what
        self.max_depth = max_depth
        self._stack: list[_Open] = []  # the open containers, the root first
        self._leaf: tuple[PathStep, ...] | None = None  # the path of the last value written
        self._string_open = False  # the last value is a string whose closing quote is to come
        self._closed = False
        self._path_text = ""
        self._path: tuple[PathStep, ...] = ()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ended the object."""
        return self._closed

    def begin(self) -> str:
        """The object's opening brace (written by the first value if not asked for)."""
        if self._stack or self._closed:
            return ""
        self._stack.append(_Open(array=False))
        return "{"

    def string(self, path: str, piece: str, *, more: bool) -> str:
        """A piece of the string at ``path``; ``more``: another piece of it follows."""
        steps = self._steps(path)
        escaped = json.dumps(piece, ensure_ascii=False)[1:-1]
        if self._string_open and steps == self._leaf:
            if more:
                return escaped
            self._string_open = False
            return escaped + '"'
        head = self._to(steps, path)
        self._string_open = more
        return head + '"' + escaped + ("" if more else '"')

    def number(self, path: str, value: float) -> str:
        """The number at ``path`` (an integral double is written as an integer)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(path, f"a number is expected, not {value!r}")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self._fail(path, f"{value!r} is no JSON number")
            text = (
                str(int(value)) if value.is_integer() and abs(value) < _SAFE_FLOAT else repr(value)
            )
        else:
            text = str(value)
        return self._to(self._steps(path), path) + text

    def literal(self, path: str, value: bool | None) -> str:
        """``true``, ``false`` or ``null`` at ``path``."""
        return self._to(self._steps(path), path) + json.dumps(value)

    def empty(self, path: str, *, array: bool) -> str:
        """An empty array (or object) at ``path``."""
        return self._to(self._steps(path), path) + ("[]" if array else "{}")

    def close(self) -> str:
        """The rest of the text: the open string's quote and every open container's end."""
        if self._closed:
            return ""
        out = ['"'] if self._string_open else []
        self._string_open = False
        if not self._stack:
            out.append("{")
            self._stack.append(_Open(array=False))
        out.extend("]" if entry.array else "}" for entry in reversed(self._stack))
        self._stack.clear()
        self._closed = True
        return "".join(out)

    def _steps(self, path: str) -> tuple[PathStep, ...]:
        if path != self._path_text or not self._path_text:  # pieces of a string repeat a path
            try:
                self._path = _parse(path, self.max_depth)
            except _PathError as exc:
                raise self._fail(path, str(exc)) from None
            self._path_text = path
        return self._path

    def _to(self, steps: tuple[PathStep, ...], path: str) -> str:
        """Close what the new value at ``steps`` is outside of, open what it is inside of,
        and write its member name or the separator before it."""
        if self._closed:
            raise self._fail(path, f"a value after the end of {self.what}")
        if not steps:
            raise self._fail(path, "the root is an object: no value can be put at $ itself")
        leaf = self._leaf
        if leaf is not None and steps == leaf:
            raise self._fail(
                path,
                "the string here is still open (its last piece said more follows): only string "
                "pieces continue it"
                if self._string_open
                else "the value at this path came again after it was final",
            )
        out: list[str] = []
        if self._string_open:
            out.append('"')
            self._string_open = False
        if not self._stack:
            out.append("{")
            self._stack.append(_Open(array=False))
        # The deepest open container holding the new value: stack[k] is the container at
        # leaf[:k], and it holds the new value when leaf[:k] == steps[:k].
        k = 0
        if leaf is not None:
            limit = min(len(leaf), len(steps))
            while k < limit and leaf[k] == steps[k]:
                k += 1
            if k == len(steps):
                raise self._fail(
                    path, f"a container is there (written at {_show(leaf)}), not a value"
                )
            if k == len(leaf):
                raise self._fail(
                    path, f"the value at {_show(leaf)} is no container, yet a path goes into it"
                )
        out.extend("]" if entry.array else "}" for entry in reversed(self._stack[k + 1 :]))
        del self._stack[k + 1 :]
        for depth in range(k, len(steps)):
            container = self._stack[depth]
            step = steps[depth]
            self._enter(container, step, steps, depth, path, out)
            if depth + 1 < len(steps):
                array = isinstance(steps[depth + 1], int)
                self._stack.append(_Open(array=array))
                out.append("[" if array else "{")
        self._leaf = steps
        return "".join(out)

    def _enter(
        self,
        container: _Open,
        step: PathStep,
        steps: tuple[PathStep, ...],
        depth: int,
        path: str,
        out: list[str],
    ) -> None:
        """Check that ``step`` is the next child of ``container`` and write what precedes it."""
        where = _show(steps[:depth])
        if container.array:
            if not isinstance(step, int):
                raise self._fail(
                    path, f"{where} is an array: its members have indices, not {step!r}"
                )
            expected = 0 if container.last is None else int(container.last) + 1
            if step != expected:
                went = "goes back to" if step < expected else "skips to"
                raise self._fail(
                    path, f"the array at {where} {went} [{step}]; [{expected}] is next"
                )
            if container.last is not None:
                out.append(",")
        else:
            if not isinstance(step, str):
                raise self._fail(
                    path, f"{where} is an object: its members have names, not [{step}]"
                )
            if step in container.keys:
                raise self._fail(
                    path, f"the member {step!r} of {where} came again after others (paths go back)"
                )
            if container.last is not None:
                out.append(",")
            container.keys.add(step)
            out.append(json.dumps(step, ensure_ascii=False) + ":")
        container.last = step

    def _fail(self, path: str, said: str) -> PartialArgumentsError:
        return PartialArgumentsError(f"{self.what}: at {_cut(path)}: {said}", json_path=path)


def _show(steps: tuple[PathStep, ...]) -> str:
    """``steps`` as a path (``$.a[0]``, ``$['a b']``)."""
    out = ["$"]
    for step in steps:
        if isinstance(step, int):
            out.append(f"[{step}]")
        elif step.isidentifier():
            out.append(f".{step}")
        else:
            out.append("[" + json.dumps(step, ensure_ascii=False) + "]")
    return "".join(out)


def _error(text: str, said: str) -> _PathError:
    return _PathError(said)


def _cut(text: str) -> str:
    """``text`` short enough for a message."""
    return text if len(text) <= 120 else text[:120] + "..."
