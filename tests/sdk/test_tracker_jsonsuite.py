"""The official JSON-Schema-Test-Suite (draft 2020-12), streamed through the tracker.

Every test of every file runs: the document (``json.dumps`` of the suite's data) is fed whole,
one character at a time, and in two random chunkings, and each time the tracker's verdict (a
:class:`~sdk.SchemaViolation` at any point, or none through ``close()``) must be the suite's.
A schema the tracker refuses when it is compiled must be refused with a :class:`~sdk.SchemaError`
naming one of the keywords in :data:`REFUSED`, each with its reason; any other refusal fails.
``format.json`` runs too: ``format`` is an annotation by default, as the suite expects.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from _tracker_support import feed_chunks

from sdk._errors import SchemaError, SchemaViolation
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._tracker import FieldTracker

SUITE = Path(__file__).resolve().parents[1] / "data" / "json-schema-test-suite" / "draft2020-12"
FILES = sorted(SUITE.glob("*.json"))

REFUSED: dict[str, str] = {
    "$dynamicRef": "resolved against the dynamic scope (the path evaluation took), which the "
    "tracker does not follow",
    "unevaluatedProperties": "depends on the annotations of every applicator that touched the "
    "object; not implemented, and ignoring it would let invalid output through",
    "unevaluatedItems": "as unevaluatedProperties, for arrays",
    "$ref": "a reference outside the document (a remote URL, the draft's meta-schema): the "
    "tracker fetches nothing",
    "$schema": "a custom meta-schema ($vocabulary): only Draft 2020-12 itself is supported",
}


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


def _run_file(path: Path) -> tuple[int, dict[str, int], list[str]]:
    """Run one file: (documents run, tests refused per keyword, disagreements)."""
    ran = 0
    refused: dict[str, int] = {}
    wrong: list[str] = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        try:
            compiled = compile_schema(group["schema"])
        except SchemaError as exc:
            assert exc.keyword in REFUSED, f"{path.name}: {group['description']}: {exc}"
            refused[exc.keyword] = refused.get(exc.keyword, 0) + len(group["tests"])
            continue
        for test in group["tests"]:
            doc = json.dumps(test["data"])
            rng = random.Random(f"{path.name}/{group['description']}/{test['description']}")
            for chunks in _chunkings(doc, rng):
                ran += 1
                if _valid(compiled, chunks) != test["valid"]:
                    wrong.append(
                        f"{path.name}: {group['description']}: {test['description']} "
                        f"(valid={test['valid']}, chunks={chunks!r})"
                    )
                    break
    return ran, refused, wrong


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_no_disagreement_with_the_suite(path: Path) -> None:
    ran, refused, wrong = _run_file(path)
    assert not wrong, "\n".join(wrong)
    assert ran or refused


def test_the_suite_is_all_there_and_every_refusal_is_listed() -> None:
    assert len(FILES) == 46
    seen: set[str] = set()
    compiled = 0
    for path in FILES:
        for group in json.loads(path.read_text(encoding="utf-8")):
            try:
                compile_schema(group["schema"])
                compiled += 1
            except SchemaError as exc:
                assert exc.keyword in REFUSED, f"{path.name}: {group['description']}: {exc}"
                seen.add(exc.keyword)
    assert seen == set(REFUSED)  # every listed refusal happens, and no other does
    assert compiled == 269  # of the suite's 383 schemas


def test_format_is_an_annotation_by_default_and_asserted_on_request() -> None:
    groups: list[dict[str, Any]] = json.loads((SUITE / "format.json").read_text("utf-8"))
    date = next(g for g in groups if g["description"] == "date format")
    assert _valid(compile_schema(date["schema"]), ['"2024-13-45"'])
    asserted = compile_schema(date["schema"], formats="assert")
    assert not _valid(asserted, ['"2024-13-45"'])
    assert _valid(asserted, ['"2024-12-31"'])
