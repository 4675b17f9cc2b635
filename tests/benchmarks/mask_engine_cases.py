"""The material ``bench_mask_engines.py`` walks through the masks, and how it reads the results.

The suite's and the corpus's schemas as :class:`Case` values; how an instance is written for the
walk (:func:`compact`, in the schema's key order: :func:`schema_order`; whole floats as integers:
:func:`integral`); which false rejections are values of a type the schema's keywords do not
name (:func:`other_type`); how refusals are grouped (:func:`reason_key`). Tested in
``test_bench_mask_engines.py``; needs neither a model nor a mask engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdk._local._llg_strict import resolve

__all__ = [
    "ARRAY_KEYWORDS",
    "CORPUS",
    "DRAFTS",
    "OBJECT_KEYWORDS",
    "SUITE",
    "Case",
    "Fits",
    "Instance",
    "compact",
    "corpus_cases",
    "integral",
    "other_type",
    "percentile",
    "reason_key",
    "schema_order",
    "suite_cases",
]

DATA = Path(__file__).resolve().parents[1] / "data"
SUITE = DATA / "json-schema-test-suite"
CORPUS = DATA / "schema-corpus"
DRAFTS = {
    "draft4": "draft-04",
    "draft6": "draft-06",
    "draft7": "draft-07",
    "draft2019-09": "2019-09",
    "draft2020-12": "2020-12",
}
"""The suite's folders and the dialect each holds."""


@dataclass(frozen=True, slots=True)
class Instance:
    """One document of the suite, as the walk writes it."""

    valid: bool
    text: str
    """Compact JSON, objects' properties in the schema's order."""
    original: str
    """Compact JSON in the suite's own order (equal to ``text`` where nothing moved)."""
    reordered: str
    """``text`` with referenced and combined schemas' properties before the schema's own."""
    respelled: str
    """``text`` with whole floats written as integers (equal to ``text`` where none is)."""
    description: str


@dataclass(frozen=True, slots=True)
class Case:
    """One schema and the instances to walk through its grammar."""

    corpus: str
    name: str
    keyword: str
    schema_text: str
    instances: tuple[Instance, ...]


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-quantile (0 <= q <= 1) of ``values`` (NaN when empty)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def reason_key(message: str) -> str:
    """A refusal's message reduced to what groups it: its first line, xgrammar's time and
    source location dropped, quoted names and numbers blanked out."""
    lines = message.strip().splitlines()
    line = lines[0] if lines else "(no message)"
    line = re.sub(r"\[[\d:]+\] \S+?:\d+: ", "", line)
    line = re.sub(r"'[^']*'", "'…'", line)
    line = re.sub(r" but got .*| \(\d+ times\)$", "", line)
    line = re.sub(r"\d+", "N", line)
    return line[:90]


Fits = Callable[[Any, Any], bool]
"""Whether a value is valid against a subschema (of the root being walked)."""


def _parts(
    schema: Any,
    root: Any,
    seen: set[int] | None = None,
    value: Any = None,
    fits: Fits | None = None,
) -> Iterator[dict[str, Any]]:
    """``schema`` and the schemas it is made of (local ``$ref``, ``allOf``, ``anyOf``,
    ``oneOf``), in document order, each once. With ``fits``, of each ``anyOf`` and ``oneOf``
    only the first member ``value`` is valid against (the branch a grammar makes the value
    take)."""
    seen = set() if seen is None else seen
    if not isinstance(schema, dict) or id(schema) in seen:
        return
    seen.add(id(schema))
    yield schema
    if isinstance(schema.get("$ref"), str):
        yield from _parts(resolve(root, schema["$ref"]), root, seen, value, fits)
    for key in ("allOf", "anyOf", "oneOf"):
        members = list(schema.get(key) or ())
        if fits is not None and key != "allOf":
            members = [next((m for m in members if fits(value, m)), None)]
        for member in members:
            yield from _parts(member, root, seen, value, fits)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON texts up to key order (``True`` is not ``1``, ``1.0`` is not ``1``)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def schema_order(
    value: Any,
    schema: Any,
    root: Any = None,
    *,
    own_first: bool = True,
    fits: Fits | None = None,
) -> Any:
    """``value`` with every object's keys in the order its schema declares them (the declared
    properties first, in the schema's order, then the others as they were; an object or array
    equal to a ``const`` or an ``enum`` member, in that value's own order), recursively through
    properties, items and local references. Values are unchanged.

    A schema's own ``properties`` come before those of the schemas it references or combines;
    ``own_first=False`` puts them after (llguidance writes a ``$ref``'s properties first).
    An undeclared key's value follows the first ``patternProperties`` its name matches, else
    ``additionalProperties``. ``fits`` (see :func:`_parts`) follows only the
    ``anyOf``/``oneOf`` branch the value takes, whose order a grammar holds it to."""
    root = schema if root is None else root
    parts = list(_parts(schema, root, None, value, fits))
    if not own_first:
        parts = parts[1:] + parts[:1]
    if isinstance(value, dict | list):
        for part in parts:
            members = [part["const"]] if "const" in part else list(part.get("enum") or ())
            for member in members:
                if _same(member, value):
                    return member
    if isinstance(value, dict):
        subschemas: dict[str, Any] = {}
        patterns: dict[str, Any] = {}
        extra: Any = True
        for part in parts:
            for key, sub in (part.get("properties") or {}).items():
                subschemas.setdefault(key, sub)
            for pattern, sub in (part.get("patternProperties") or {}).items():
                patterns.setdefault(pattern, sub)
            if extra is True and isinstance(part.get("additionalProperties"), dict):
                extra = part["additionalProperties"]

        def undeclared(key: str) -> Any:
            for pattern, sub in patterns.items():
                try:
                    if re.search(pattern, key):
                        return sub
                except re.error:  # an ECMA pattern Python cannot read: the next one
                    continue
            return extra

        keys = [k for k in subschemas if k in value] + [k for k in value if k not in subschemas]
        return {
            k: schema_order(
                value[k],
                subschemas[k] if k in subschemas else undeclared(k),
                root,
                own_first=own_first,
                fits=fits,
            )
            for k in keys
        }
    if isinstance(value, list):
        prefix: list[Any] = []
        rest: Any = True
        for part in parts:
            items = part.get("items")
            if not prefix:
                prefix = list(part.get("prefixItems") or (items if isinstance(items, list) else []))
            if rest is True and isinstance(items, dict):
                rest = items
        return [
            schema_order(
                item, prefix[i] if i < len(prefix) else rest, root, own_first=own_first, fits=fits
            )
            for i, item in enumerate(value)
        ]
    return value


def integral(value: Any) -> Any:
    """``value`` with every float that is a whole number written as an integer (``1.0`` ->
    ``1``): the same JSON value, spelt as a grammar for ``integer`` or a ``const`` of ``1``
    lets a model write it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


OBJECT_KEYWORDS = frozenset(
    "properties required additionalProperties patternProperties unevaluatedProperties "
    "dependencies dependentSchemas dependentRequired propertyNames minProperties "
    "maxProperties".split()
)
ARRAY_KEYWORDS = frozenset(
    "items prefixItems additionalItems unevaluatedItems contains minContains maxContains "
    "uniqueItems minItems maxItems".split()
)


def other_type(schema_text: str, instance_text: str) -> bool:
    """True when the schema's root has no ``type`` but object (or array) keywords, and the
    instance is not an object (not an array): JSON Schema lets any other type through such a
    schema, a grammar that reads the keywords as a type does not."""
    schema, value = json.loads(schema_text), json.loads(instance_text)
    if not isinstance(schema, dict) or "type" in schema:
        return False
    keys = set(schema)
    return bool(
        (keys & OBJECT_KEYWORDS and not isinstance(value, dict))
        or (keys & ARRAY_KEYWORDS and not isinstance(value, list))
    )


def compact(value: Any) -> str:
    """``value`` as compact JSON (the layout both grammars are compiled for)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- the corpora ----------------------------------------------------------------------------


def suite_cases(drafts: list[str]) -> list[Case]:
    """Every schema of the suite's main files of ``drafts``, with its instances."""
    from sdk._schema._vocabulary import META_SCHEMAS

    cases = []
    for folder in drafts:
        for path in sorted((SUITE / folder).glob("*.json")):
            groups = json.loads(path.read_text(encoding="utf-8"))
            for index, group in enumerate(groups):
                schema = group["schema"]
                if isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": META_SCHEMAS[DRAFTS[folder]], **schema}
                instances = tuple(
                    Instance(
                        test["valid"],
                        compact(schema_order(test["data"], schema)),
                        compact(test["data"]),
                        compact(schema_order(test["data"], schema, own_first=False)),
                        compact(schema_order(integral(test["data"]), schema)),
                        test["description"],
                    )
                    for test in group["tests"]
                )
                cases.append(
                    Case(
                        "suite",
                        f"{folder}/{path.stem}#{index}",
                        path.stem,
                        compact(schema),
                        instances,
                    )
                )
    return cases


def corpus_cases(limit: int | None) -> list[Case]:
    """The real-world schemas (no instances)."""
    paths = sorted(CORPUS.glob("*/*.json"))[:limit]
    return [
        Case(
            "real-world",
            f"{p.parent.name}/{p.stem}",
            p.parent.name,
            compact(json.loads(p.read_text(encoding="utf-8"))),
            (),
        )
        for p in paths
    ]
