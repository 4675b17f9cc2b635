"""What xgrammar (the torch runtime's masks) is given of a JSON Schema: each ``pattern`` with
its large counted repetitions loosened.

xgrammar's JSON-schema compile of a ``pattern`` grows with the square of each counted
repetition's bound (measured with xgrammar 0.2.9 here: ``^.{0,1000}$`` 0.4 s, ``^.{0,5000}$``
9 s, ``^[a-z]{1,20000}$`` 26 s, ``^[a-z]{1,32768}$`` 114 s), which stalls the first generation
of such a schema. A repetition whose bound passes :data:`MAX_MASK_COUNT` is written
``{k,}`` for the mask (:func:`sdk._regex._ecma.loosen_counts`): the mask lets through a superset,
and the client still checks the exact pattern as the text streams (a string that runs past the
bound is a violation at its first extra character, retried or rewound like any other).
llguidance (the llama.cpp runtime) reads large counts lazily and is given the schema as is.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from sdk._local._deps import require
from sdk._local._llg_strict import strict_schema
from sdk._local._mask_budget import PLAN_BUILD_BUDGET
from sdk._local._mask_schema import (
    Relaxation,
    mask_schema,
    pointer,
    united_pattern_properties,
    widened,
)
from sdk._regex._ecma import EcmaRegexError, loosen_counts

__all__ = [
    "MAX_MASK_COUNT",
    "XgrPlan",
    "distributed",
    "loosened",
    "loosened_text",
    "searched",
    "xgr_grammar",
    "xgr_plan",
]

MAX_MASK_COUNT = 1000
"""The largest repetition count given to xgrammar as written (RE2's own limit on a count):
``^.{0,1000}$`` compiles in 0.4 s."""

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
)


_UNPLACED = (
    "an anchor inside a group, which xgrammar's whole-string reading cannot place: any string"
)


def searched(pattern: str) -> str | None:
    """``pattern`` as JSON Schema reads it (found anywhere in the string: ``^https?://``
    takes ``"https://x.org"``) in the form xgrammar reads, which matches the whole string:
    each top-level alternative without its ``^`` starts with ``.*``, without its ``$`` ends
    with ``.*``. None when a ``^`` or ``$`` stands anywhere else (inside a group, mid-way):
    then the mask takes any string and the client checks the pattern."""
    alternatives: list[str] = []
    depth, start, i, in_class = 0, 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            alternatives.append(pattern[start:i])
            start = i + 1
        elif c in "^$" and (depth or (c == "^" and i != start)):
            return None
        elif c == "$" and i + 1 < len(pattern) and pattern[i + 1] != "|":
            return None
        i += 1
    alternatives.append(pattern[start:])
    if alternatives == [pattern] and pattern.startswith("^") and pattern.endswith("$"):
        if not pattern.endswith("\\$"):
            return pattern  # anchored at both ends: as it is
    out = []
    for alternative in alternatives:
        body, head, tail = alternative, ".*", ".*"
        if body.startswith("^"):
            body, head = body[1:], ""
        if body.endswith("$") and not _escaped(body, len(body) - 1):
            body, tail = body[:-1], ""
        out.append(f"{head}(?:{body}){tail}" if head or tail else body)
    return "|".join(out)


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd run of backslashes."""
    run = 0
    while at - run - 1 >= 0 and text[at - run - 1] == "\\":
        run += 1
    return run % 2 == 1


class _Edit:
    """A schema rewritten copy-on-write: :attr:`result` is the schema itself until the first
    change, then a shallow copy with the changes (the walks below return the very object they
    were given when nothing in it changes)."""

    __slots__ = ("out", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.out: dict[str, Any] | None = None

    @property
    def result(self) -> dict[str, Any]:
        return self.schema if self.out is None else self.out

    def put(self, key: str, value: Any) -> None:
        if value is not self.schema.get(key):
            if self.out is None:
                self.out = dict(self.schema)
            self.out[key] = value

    def drop(self, key: str) -> None:
        if self.out is None:
            self.out = dict(self.schema)
        del self.out[key]

    def children(self, rewrite: Callable[[Any, tuple[str, ...]], Any]) -> None:
        """Put ``rewrite(subschema, steps)`` in place of each subschema (under the maps, the
        lists and the single-schema keywords), ``steps`` its keys below this schema."""
        schema = self.schema
        for key in _SCHEMA_MAPS:
            members = schema.get(key)
            if isinstance(members, dict):
                new = {name: rewrite(member, (key, name)) for name, member in members.items()}
                if any(new[name] is not members[name] for name in members):
                    self.put(key, new)
        for key in (*_SCHEMA_LISTS, *_SCHEMA_ONE):
            value = schema.get(key)
            if isinstance(value, list):  # also draft-04's array form of items
                new_list = [rewrite(m, (key, str(i))) for i, m in enumerate(value)]
                if any(a is not b for a, b in zip(new_list, value, strict=True)):
                    self.put(key, new_list)
            elif isinstance(value, dict):
                self.put(key, rewrite(value, (key,)))


def loosened(schema: Any, notes: list[Relaxation] | None = None, path: tuple[str, ...] = ()) -> Any:
    """``schema`` with every ``pattern`` loosened (see the module docstring); the schema's data
    (``const``, ``enum``, ``default``, ``examples``...) and anything else untouched. Returns
    ``schema`` itself when nothing changes. Each pattern loosened is added to ``notes`` (when
    given) as a :class:`~sdk._local._mask_schema.Relaxation` at its ``path``."""
    if not isinstance(schema, dict):
        return schema
    edit = _Edit(schema)
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            counted = loosen_counts(pattern, MAX_MASK_COUNT)
        except EcmaRegexError:
            counted = pattern  # not the client's to fix: xgrammar says what is wrong with it
        else:
            if notes is not None and counted != pattern:
                notes.append(
                    Relaxation(
                        pointer(path),
                        "pattern",
                        f"a count over {MAX_MASK_COUNT} written {{k,}} (xgrammar's compile time)",
                    )
                )
        found = searched(counted)
        if found is None:
            edit.drop("pattern")
            if notes is not None:
                notes.append(Relaxation(pointer(path), "pattern", _UNPLACED))
        elif found != pattern:
            edit.put("pattern", found)
    edit.children(lambda member, steps: loosened(member, notes, (*path, *steps)))
    return edit.result


def loosened_text(schema_text: str) -> str:
    """:func:`loosened` over a schema's JSON text (the text itself when nothing changes)."""
    if '"pattern"' not in schema_text:
        return schema_text
    schema = json.loads(schema_text)
    new = loosened(schema)
    return schema_text if new is schema else json.dumps(new, separators=(",", ":"))


_OBJECT_WORDS = ("properties", "required", "additionalProperties")


def _merged(parent: dict[str, Any], branch: Any) -> Any:
    """``branch`` (of ``parent``'s ``anyOf``/``oneOf``) with ``parent``'s ``properties``,
    ``required`` and ``additionalProperties`` in it: a name both list takes both schemas (an
    ``allOf``), the parent's names first; the branch itself when it is not a plain schema (a
    ``$ref``, a boolean)."""
    if not isinstance(branch, dict) or "$ref" in branch:
        return branch
    out = dict(branch)
    own: dict[str, Any] = branch.get("properties") or {}
    listed: dict[str, Any] = parent.get("properties") or {}
    if not isinstance(own, dict) or not isinstance(listed, dict):
        return branch
    properties = {
        name: _both(sub, own[name]) if name in own else sub for name, sub in listed.items()
    }
    properties.update({name: sub for name, sub in own.items() if name not in listed})
    if properties:
        out["properties"] = properties
    required: list[Any] = []
    for side in (parent, branch):
        names = side.get("required")
        required.extend(names if isinstance(names, list) else [])
    if required:
        out["required"] = list(dict.fromkeys(required))
    if "additionalProperties" in parent:
        out["additionalProperties"] = (
            parent["additionalProperties"]
            if "additionalProperties" not in branch
            else _both(parent["additionalProperties"], branch["additionalProperties"])
        )
    return out


def _both(first: Any, second: Any) -> Any:
    """A schema of the values both take: one of them when the other takes anything."""
    if first in ({}, True):
        return second
    if second in ({}, True):
        return first
    return {"allOf": [first, second]}


def distributed(schema: Any) -> Any:
    """``schema`` with each object's ``properties``, ``required`` and ``additionalProperties``
    copied into each plain branch of its ``anyOf``/``oneOf``: xgrammar builds an object with an
    ``anyOf`` from the branches alone, its siblings dropped (``{"properties": {"name": ...},
    "anyOf": [{"properties": {"url": ...}, "required": ["url"]}]}`` took ``{"url":"b",
    "name":"a"}`` and refused ``{"name":"a","url":"b"}``: the branch's names first, the
    object's own as any value after them). Returns ``schema`` itself when nothing changes."""
    if not isinstance(schema, dict):
        return schema
    edit = _Edit(schema)
    edit.children(lambda member, _steps: distributed(member))
    current = edit.result
    if any(word in current for word in _OBJECT_WORDS):
        for key in ("anyOf", "oneOf"):
            branches = current.get(key)
            if isinstance(branches, list):
                edit.put(key, [_merged(current, branch) for branch in branches])
    return edit.result


def xgr_grammar(schema_text: str, **options: Any) -> Any:
    """xgrammar's grammar of the JSON Schema ``schema_text`` (JSON text) with layout
    ``options``: the schema under the project's strict rule (``_llg_strict.strict_schema``, the
    llama.cpp runtime's too, so both runtimes close the same objects), its patterns loosened,
    built with xgrammar's own ``strict_mode`` off (it closed every object to its own
    properties, an ``allOf``'s and a branch's included: narrower than the schema), each object's
    own properties copied into its ``anyOf``/``oneOf`` branches (:func:`distributed`)."""
    xgr = require("xgrammar")
    strict = json.dumps(distributed(strict_schema(json.loads(schema_text))), separators=(",", ":"))
    return xgr.Grammar.from_json_schema(loosened_text(strict), strict_mode=False, **options)


# The place xgrammar's C++ errors start with: "[12:00:00] /project/cpp/file.cc:94: ".
_XGRAMMAR_WHERE = re.compile(r"^\[[0-9:]+\] \S+:\d+: ")


def _xgr_refusal(schema: Any) -> str:
    """xgrammar's reason it cannot build the grammar of ``schema`` ("" when it can)."""
    text = json.dumps(schema, separators=(",", ":"))
    try:
        xgr_grammar(text)
    except Exception as exc:  # xgrammar raises RuntimeError, ValueError and its own errors
        return _XGRAMMAR_WHERE.sub("", str(exc).strip()) or repr(exc)
    return ""


class XgrPlan:
    """What the torch runtime masks for a JSON Schema: ``text`` (the schema xgrammar
    compiles: the caller's never narrowed, widened where xgrammar refuses it), each
    :class:`~sdk._local._mask_schema.Relaxation`, and xgrammar's reason for refusing the
    caller's schema as it was ("" when it took it)."""

    __slots__ = ("refused", "relaxations", "text")

    def __init__(self, text: str, relaxations: tuple[Relaxation, ...], refused: str) -> None:
        self.text = text
        self.relaxations = relaxations
        self.refused = refused


def _timed_refusal(schema: Any, budget: float | None) -> str | None:
    """:func:`_xgr_refusal` of ``schema``, or None when building its grammar takes over
    ``budget`` seconds (it goes on in the background: nothing waits on it)."""
    if budget is None:
        return _xgr_refusal(schema)
    from sdk._local._mask_budget import in_thread

    try:
        return in_thread(lambda: _xgr_refusal(schema)).result(timeout=budget)
    except FutureTimeout:
        return None


@functools.lru_cache(maxsize=64)
def xgr_plan(text: str, budget: float | None = PLAN_BUILD_BUDGET) -> XgrPlan:
    """The schema xgrammar masks for the JSON Schema ``text`` (cached: the request's check and
    its compile share it). Without xgrammar installed, the never-narrower rewrite alone. A
    schema whose grammar takes over ``budget`` seconds to build is masked without its patterns
    (``_mask_budget.without_patterns``), or as any value if that too takes over it."""
    schema, notes = mask_schema(json.loads(text))
    schema, united = united_pattern_properties(schema)
    notes = (*notes, *united)
    try:
        import xgrammar  # noqa: F401
    except ImportError:
        return XgrPlan(json.dumps(schema, separators=(",", ":")), notes, "")
    first = _timed_refusal(schema, budget)
    if first is None and budget is not None:  # too slow to check: the widened schema's mask
        from sdk._local._mask_budget import without_patterns

        slow = f"its grammar took over the {budget} s budget to build"
        wider, dropped = without_patterns(schema)
        if dropped and _timed_refusal(wider, budget / 4) == "":
            return XgrPlan(json.dumps(wider, separators=(",", ":")), (*notes, *dropped), slow)
        return XgrPlan("{}", (*notes, Relaxation("/", "*", f"{slow}: any value")), slow)
    checked = schema  # its reason is known: not built again

    def refusal(candidate: Any) -> str:
        return first if candidate is checked and first is not None else _xgr_refusal(candidate)

    masked, widenings, refused = widened(schema, refusal)
    counted: list[Relaxation] = []
    loosened(masked, counted)  # recorded here; the compile loosens the same text again
    return XgrPlan(
        json.dumps(masked, separators=(",", ":")), (*notes, *widenings, *counted), refused
    )
