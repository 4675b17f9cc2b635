"""The official JSON-Schema-Test-Suite, every dialect (draft-04, -06, -07, 2019-09, 2020-12),
streamed through the tracker.

Every test of every file runs: the schema is given its draft's ``$schema`` (the suite's schemas
mostly leave it out), the document (``json.dumps`` of the suite's data) is fed whole, one
character at a time, and in two random chunkings, and each time the tracker's verdict (a
:class:`~sdk.SchemaViolation` at any point, or none through ``close()``) must be the suite's.
Remote references resolve from the suite's ``remotes/`` (``http://localhost:1234/...``) passed
as a registry, as its README says to. A schema the tracker refuses when it is compiled must be
refused with a :class:`~sdk.SchemaError` naming one of the keywords in :data:`REFUSED`, each
with its reason; any other refusal fails. ``format.json`` runs too: ``format`` is an annotation
by default, as the suite expects.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from sdk._errors import SchemaError, SchemaViolation
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._schema._vocabulary import META_SCHEMAS
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks

DATA = Path(__file__).resolve().parents[2] / "data" / "json-schema-test-suite"
DRAFTS = {
    "draft4": "draft-04",
    "draft6": "draft-06",
    "draft7": "draft-07",
    "draft2019-09": "2019-09",
    "draft2020-12": "2020-12",
}
FILES = [(folder, path) for folder in DRAFTS for path in sorted((DATA / folder).glob("*.json"))]
REMOTES = {
    "http://localhost:1234/" + path.relative_to(DATA / "remotes").as_posix(): json.loads(
        path.read_text(encoding="utf-8")
    )
    for path in sorted((DATA / "remotes").rglob("*.json"))
}

REFUSED: dict[str, str] = {
    "$dynamicRef": "names a different schema depending on the path the evaluation took (several "
    "resources hold its anchor): the tracker resolves references before it reads any output",
    "$recursiveRef": "as $dynamicRef, in draft 2019-09",
    "$schema": "a custom meta-schema ($vocabulary): only the five dialects themselves are read",
}
"""What stays refused, and why (each happens in the suite; no other refusal does)."""


def _with_schema(schema: Any, folder: str) -> Any:
    if isinstance(schema, dict) and "$schema" not in schema:
        return {"$schema": META_SCHEMAS[DRAFTS[folder]], **schema}
    return schema


def _compile(schema: Any, folder: str) -> CompiledSchema:
    if isinstance(schema, bool):  # no room for a $schema: the draft is the default dialect
        return compile_schema(schema, dialect=DRAFTS[folder], registry=REMOTES)
    return compile_schema(_with_schema(schema, folder), registry=REMOTES)


def _chunkings(doc: str, rng: random.Random) -> list[list[str]]:
    out = [[doc], list(doc)]
    for _ in range(2):
        cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, rng.randint(1, 8))))
        bounds = [0, *cuts, len(doc)]
        out.append([doc[a:b] for a, b in itertools.pairwise(bounds)])
    return out


def _valid(compiled: CompiledSchema, chunks: list[str]) -> bool:
    tracker = FieldTracker(compiled)
    try:
        feed_chunks(tracker, chunks)
        tracker.close()
    except SchemaViolation:
        return False
    return True


def _run_file(folder: str, path: Path) -> tuple[int, dict[str, int], list[str]]:
    """Run one file: (documents run, tests refused per keyword, disagreements)."""
    ran = 0
    refused: dict[str, int] = {}
    wrong: list[str] = []
    name = f"{folder}/{path.name}"
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            compiled = _compile(group["schema"], folder)
        except SchemaError as exc:
            assert exc.keyword in REFUSED, f"{name}: {group['description']}: {exc}"
            refused[exc.keyword] = refused.get(exc.keyword, 0) + len(group["tests"])
            continue
        for test in group["tests"]:
            doc = json.dumps(test["data"])
            rng = random.Random(f"{name}/{group['description']}/{test['description']}")
            for chunks in _chunkings(doc, rng):
                ran += 1
                if _valid(compiled, chunks) != test["valid"]:
                    wrong.append(
                        f"{name}: {group['description']}: {test['description']} "
                        f"(valid={test['valid']}, chunks={chunks!r})"
                    )
                    break
    return ran, refused, wrong


@pytest.mark.parametrize(
    ("folder", "path"), FILES, ids=[f"{folder}/{path.stem}" for folder, path in FILES]
)
def test_no_disagreement_with_the_suite(folder: str, path: Path) -> None:
    ran, refused, wrong = _run_file(folder, path)
    assert not wrong, "\n".join(wrong)
    assert ran or refused


def _tally() -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """Per draft: (schemas compiled, schemas in all); per refused keyword: schemas."""
    counts: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    for folder, path in FILES:
        compiled, total = counts.get(folder, (0, 0))
        for group in json.loads(path.read_text(encoding="utf-8")):
            total += 1
            try:
                _compile(group["schema"], folder)
                compiled += 1
            except SchemaError as exc:
                assert exc.keyword in REFUSED, f"{path.name}: {group['description']}: {exc}"
                seen[exc.keyword] = seen.get(exc.keyword, 0) + 1
        counts[folder] = (compiled, total)
    return counts, seen


def test_the_suite_is_all_there_and_every_refusal_is_listed() -> None:
    assert {f: sum(1 for g, _ in FILES if g == f) for f in DRAFTS} == {
        "draft4": 30,
        "draft6": 36,
        "draft7": 37,
        "draft2019-09": 46,
        "draft2020-12": 46,
    }
    counts, seen = _tally()
    assert set(seen) == set(REFUSED)  # every listed refusal happens, and no other does
    assert counts == {  # (schemas compiled, schemas in all)
        "draft4": (160, 160),
        "draft6": (232, 232),
        "draft7": (257, 257),
        "draft2019-09": (366, 372),
        "draft2020-12": (375, 383),
    }


def test_format_is_an_annotation_by_default_and_asserted_on_request() -> None:
    groups: list[dict[str, Any]] = json.loads(
        (DATA / "draft2020-12" / "format.json").read_text("utf-8")
    )
    date = next(g for g in groups if g["description"] == "date format")
    assert _valid(compile_schema(date["schema"]), ['"2024-13-45"'])
    asserted = compile_schema(date["schema"], formats="assert")
    assert not _valid(asserted, ['"2024-13-45"'])
    assert _valid(asserted, ['"2024-12-31"'])
