"""The schema a grammar engine masks for the caller's schema: never narrower than it.

The tracker reads the caller's schema as JSON Schema says; the grammar engines (llguidance on
the llama.cpp runtime, xgrammar on torch) read some keywords more narrowly than it does. Before
the mask is compiled, :func:`mask_schema` rewrites the schema so that every document it admits
is admitted by the mask too (but for the strict rule, ``_llg_strict``, and key order), each
change a :class:`Relaxation` named by its path; the tracker still enforces the caller's schema
while the text streams, so what the mask lets through and the schema does not is caught there.

- ``format`` is an annotation (the tracker's default, ``formats="annotate"``): it is left out.
  Under ``formats="assert"`` the tracker checks it while the string streams; the engines' own
  format checks refuse values the tracker's checker takes, so the mask never asserts it.
- ``minProperties`` / ``maxProperties`` of an object that lists properties: llguidance counts
  only the undeclared ones (``{"minProperties": 1, "properties": {"a": {}}}`` never closes
  ``{"a": true}``); left to the tracker (an object without ``properties`` keeps them).
- numbers: llguidance's and xgrammar's bounded numbers refuse spellings ``json.dumps`` writes
  (``1e-06`` under ``minimum: 0``; ``0.5`` and ``2.0`` under ``multipleOf: 0.25``; ``0.0``
  under ``minimum: 0, maximum: 0``): a ``number`` with bounds or ``multipleOf`` is masked as
  any number; an ``integer`` keeps its bounds (but one at or past ±2^63, which llguidance
  refuses). A float in an ``enum`` or ``const`` (``{"a": 0.0}``, which llguidance writes only
  as ``{"a":0}``) is masked as any number at its place, the rest of the value exactly.

:func:`widened` is the second step, for a schema the engine still refuses: it relaxes the part
it cannot take (an unreadable pattern, overlapping ``patternProperties``, a ``$ref`` with
siblings, a ``$ref`` to nothing, then whole subschemas from the deepest up) until the engine
compiles it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sdk._local._llg_strict import resolve

__all__ = [
    "Relaxation",
    "fitted_strings",
    "mask_schema",
    "pointer",
    "subschemas",
    "united_pattern_properties",
    "widened",
]

_ONE = (
    *("additionalProperties", "items", "not", "if", "then", "else", "contains"),
    *("propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"),
)
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_INT_LIMIT = 2**63
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly", "$schema", "$anchor", "$id", "format", "$defs", "definitions"}
)


@dataclass(frozen=True, slots=True)
class Relaxation:
    """One change of the mask's schema: at ``path`` (a JSON pointer into the caller's
    schema), ``keyword`` is masked wider than the schema says (``widened``) or read as an
    annotation (``annotation``: ``format``), for ``reason``; or (``pending``, the stream's
    report only) the plan was not ready within the mask's budget."""

    path: str
    keyword: str
    reason: str
    kind: str = "widened"


def pointer(path: tuple[str, ...]) -> str:
    """``path`` (steps) as a JSON pointer; ``/`` for the root."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path) or "/"


def subschemas(node: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each direct subschema of ``node``: (its path steps below ``node``, the subschema)."""
    for key in _ONE:
        value = node.get(key)
        if isinstance(value, dict | bool):
            yield (key,), value
        elif key in ("items", "additionalItems") and isinstance(value, list):
            for i, sub in enumerate(value):
                yield (key, str(i)), sub
    for key in _LIST:
        value = node.get(key)
        if isinstance(value, list):
            for i, sub in enumerate(value):
                yield (key, str(i)), sub
    for key in _MAP:
        value = node.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                yield (key, name), sub


def _rebuild(node: dict[str, Any], step: tuple[str, ...], sub: Any) -> None:
    """Put ``sub`` at ``step`` of ``node`` (a copy the caller owns; containers copied)."""
    if len(step) == 1:
        node[step[0]] = sub
        return
    key, at = step
    container = node[key]
    if isinstance(container, list):
        container = list(container)
        container[int(at)] = sub
    else:
        container = dict(container)
        container[at] = sub
    node[key] = container


def _map(node: Any, fn: Callable[[Any, tuple[str, ...]], Any], path: tuple[str, ...]) -> Any:
    """``fn`` applied to every subschema bottom-up (children first); the input unchanged."""
    if not isinstance(node, dict):
        return fn(node, path)
    out: dict[str, Any] | None = None
    for step, sub in list(subschemas(node)):
        new = _map(sub, fn, path + step)
        if new is not sub:
            if out is None:
                out = dict(node)
            _rebuild(out, step, new)
    return fn(node if out is None else out, path)


def _allows_number(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    return "number" in kinds


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _value_schema(value: Any) -> Any:
    """A schema of exactly ``value`` (JSON equality: ``1`` and ``1.0`` are one number) but
    for each float, masked as any number."""
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {k: _value_schema(v) for k, v in value.items()},
            "required": list(value),
            "additionalProperties": False,
        }
    if isinstance(value, list):
        return {
            "type": "array",
            "prefixItems": [_value_schema(v) for v in value],
            "items": False,
            "minItems": len(value),
        }
    return {"const": value}


def mask_schema(schema: Any) -> tuple[Any, tuple[Relaxation, ...]]:
    """The schema the mask compiles for ``schema`` and what it relaxes (module docstring)."""
    notes: list[Relaxation] = []

    def fix(node: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        where = pointer(path)
        if isinstance(out.get("format"), str):
            del out["format"]
            notes.append(
                Relaxation(where, "format", "an annotation (formats='annotate')", "annotation")
            )
        numeric = [k for k in _NUMERIC if k in out]
        if numeric and _allows_number(out):
            for key in numeric:
                del out[key]
            notes.append(
                Relaxation(
                    where,
                    ",".join(numeric),
                    "a bounded number refuses spellings json.dumps writes (1e-06, 2.0): any number",
                )
            )
        elif numeric:
            for key in numeric:
                value = out[key]
                if isinstance(value, int | float) and abs(value) >= _INT_LIMIT:
                    del out[key]
                    notes.append(Relaxation(where, key, "an integer bound at or past 2^63"))
        counted = [k for k in ("minProperties", "maxProperties") if k in out]
        if counted and (out.get("properties") or out.get("patternProperties")):
            for key in counted:
                del out[key]
            notes.append(
                Relaxation(
                    where,
                    ",".join(counted),
                    "llguidance counts only undeclared properties: left to the tracker",
                )
            )
        for key in ("const", "enum"):
            if key in out and _has_float(out[key]):
                values = [out.pop(key)] if key == "const" else out.pop(key)
                if not isinstance(values, list):
                    out[key] = values
                    continue
                exact = {"anyOf": [_value_schema(v) for v in values]}
                rest = set(out) - _ANNOTATIONS - {"type"}
                if rest:
                    out["allOf"] = [*out.get("allOf", []), exact]
                else:
                    out.pop("type", None)
                    out.update(exact if len(values) != 1 else _value_schema(values[0]))
                notes.append(
                    Relaxation(where, key, "a float in it: any number at its place (spelling)")
                )
        return out

    return _map(schema, fix, ()), tuple(notes)


def united_pattern_properties(schema: Any) -> tuple[Any, tuple[Relaxation, ...]]:
    """``schema`` with each ``patternProperties`` of several patterns made one rule for their
    union (a name matching several then takes any of their values): xgrammar takes
    overlapping patterns but refuses a name that matches a later one (``{"^a":..,"^ab":..}``
    refuses ``"abc"``)."""
    notes: list[Relaxation] = []

    def fix(node: Any, path: tuple[str, ...]) -> Any:
        named = node.get("patternProperties") if isinstance(node, dict) else None
        if not isinstance(named, dict) or len(named) < 2:
            return node
        union = "|".join(f"(?:{p})" for p in named)
        notes.append(
            Relaxation(
                pointer(path), "patternProperties", "several patterns: one rule for their union"
            )
        )
        return {**node, "patternProperties": {union: {"anyOf": list(named.values())}}}

    return _map(schema, fix, ()), tuple(notes)


def fitted_strings(
    schema: Any, stops: Callable[[dict[str, Any]], str]
) -> tuple[Any, tuple[Relaxation, ...]]:
    """``schema`` with each string schema whose ``pattern`` the engine compiles but cannot run
    (``stops(string schema)``: the engine's reason, "" when it runs) relaxed: the pattern
    dropped (any string within the length bounds), then the length bounds too if it still
    stops. For llguidance's lexer, which builds a pattern's states as the text comes and may
    run out of them at the string's first token (``too many expressions constructed``)."""
    notes: list[Relaxation] = []

    def fix(node: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(node, dict) or not isinstance(node.get("pattern"), str):
            return node
        probe = {k: node[k] for k in ("pattern", "minLength", "maxLength") if k in node}
        reason = stops({"type": "string", **probe})
        if not reason:
            return node
        out = {k: v for k, v in node.items() if k != "pattern"}
        why = f"the engine's lexer stops on it ({reason}): any string"
        lengths: dict[str, Any] = {k: probe[k] for k in ("minLength", "maxLength") if k in probe}
        if lengths and stops({"type": "string", **lengths}):
            for key in lengths:
                del out[key]
            notes.append(Relaxation(pointer(path), ",".join(["pattern", *lengths]), why))
        else:
            notes.append(Relaxation(pointer(path), "pattern", why + " within the length bounds"))
        return out

    return _map(schema, fix, ()), tuple(notes)


# --- widening a schema the engine refuses --------------------------------------------------


def _depth(node: Any) -> int:
    if not isinstance(node, dict):
        return 0
    return 1 + max((_depth(sub) for _, sub in subschemas(node)), default=0)


def _cut(schema: Any, depth: int, notes: list[Relaxation], reason: str) -> Any:
    """``schema`` with every subschema ``depth`` levels down (definitions included) masked as
    any value."""

    def walk(node: Any, path: tuple[str, ...], level: int) -> Any:
        if not isinstance(node, dict):
            return node
        if level >= depth:
            if set(node) - _ANNOTATIONS:
                notes.append(Relaxation(pointer(path), "*", reason))
            return {}
        out: dict[str, Any] | None = None
        for step, sub in list(subschemas(node)):
            new = walk(sub, path + step, level + 1)
            if new is not sub:
                if out is None:
                    out = dict(node)
                _rebuild(out, step, new)
        return node if out is None else out

    if depth <= 0:
        notes.append(Relaxation("/", "*", reason))
        return {}
    return walk(schema, (), 0)


def widened(schema: Any, refusal: Callable[[Any], str]) -> tuple[Any, tuple[Relaxation, ...], str]:
    """``schema`` relaxed until ``refusal(schema)`` (the engine's reason it cannot compile a
    schema, "" when it can) is "": the schema, its relaxations, and the engine's first reason
    ("" when the schema compiled as it was). A malformed schema (its translation failed: the
    reason starts with "malformed") is returned as it is, to be refused: it is not a schema to
    widen."""
    first = refusal(schema)
    if not first or first.startswith("malformed"):
        return schema, (), first  # a schema that is not one is refused, not widened
    notes: list[Relaxation] = []
    readable: dict[str, bool] = {}

    def pattern_ok(pattern: str) -> bool:
        if pattern not in readable:
            readable[pattern] = not refusal({"type": "string", "pattern": pattern})
        return readable[pattern]

    def local(node: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        out = dict(node)
        where = pointer(path)
        pattern = out.get("pattern")
        if isinstance(pattern, str) and not pattern_ok(pattern):
            del out["pattern"]
            notes.append(Relaxation(where, "pattern", "a pattern the engine cannot read"))
        ref = out.get("$ref")
        if isinstance(ref, str) and resolve(schema, ref) is None:
            notes.append(Relaxation(where, "$ref", f"{ref!r} refers to nothing: any value"))
            return {}
        extra = set(out) - _ANNOTATIONS - {"$ref"}
        if isinstance(ref, str) and extra:
            siblings = {k: out.pop(k) for k in sorted(extra)}
            del out["$ref"]
            out["allOf"] = [{"$ref": ref}, siblings]
            notes.append(Relaxation(where, "$ref", "a $ref beside other keywords: as an allOf"))
        named = out.get("patternProperties")
        if isinstance(named, dict) and named:
            if len(named) > 1 or not all(pattern_ok(p) for p in named):
                values = list(named.values())
                union = "|".join(f"(?:{p})" for p in named)
                extra_value = out.get("additionalProperties")
                if pattern_ok(union) and refusal({"patternProperties": {union: {}}}) == "":
                    out["patternProperties"] = {union: {"anyOf": values}}
                    why = "overlapping patternProperties: one rule for their union"
                else:
                    del out["patternProperties"]
                    if extra_value is not True and isinstance(extra_value, dict | bool):
                        values.append(extra_value) if extra_value is not False else None
                    out["additionalProperties"] = True if extra_value is True else {"anyOf": values}
                    why = "patternProperties the engine cannot read: any name"
                notes.append(Relaxation(where, "patternProperties", why))
        return out

    schema = _map(schema, local, ())
    reason = refusal(schema)
    if not reason:
        return schema, tuple(notes), first
    # Whole subschemas, from the deepest level up, until it compiles (level 0: any value).
    low, high = 0, _depth(schema)
    best: Any = {}
    best_notes: list[Relaxation] = [Relaxation("/", "*", reason)]
    while low < high:  # the deepest cut that compiles: every level above it is kept
        middle = (low + high + 1) // 2
        trial: list[Relaxation] = []
        cut = _cut(schema, middle, trial, f"too deep or too large for the engine ({reason})")
        if refusal(cut):
            high = middle - 1
        else:
            low, best, best_notes = middle, cut, trial
    if low == 0:
        best_notes = [Relaxation("/", "*", f"the engine cannot compile it ({reason}): any value")]
    return best, (*notes, *best_notes), first


def canonical_text(schema: Any) -> str:
    """``schema`` as the compact JSON the compile caches key by (key order kept)."""
    return json.dumps(schema, separators=(",", ":"))
