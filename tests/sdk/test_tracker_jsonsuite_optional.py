"""The JSON-Schema-Test-Suite's optional tests (draft 2020-12) that fieldstream means to pass.

``optional/ecmascript-regex.json`` and ``optional/non-bmp-regex.json``: patterns are ECMA-262
regexes (``\\d`` is ASCII, ``$`` is the end, surrogate pairs are one character).
``optional/format/*.json`` with ``formats="assert"``: a format fieldstream checks must agree
with the suite; one it does not check (an annotation, listed in ``docs/patterns.md``) may only
let through what the suite calls invalid, never refuse what it calls valid.

Each document is streamed as in ``test_tracker_jsonsuite.py``: whole, one character at a time,
and in two random chunkings.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from _tracker_support import feed_chunks

from sdk._errors import SchemaViolation
from sdk._schema._compile import CompiledSchema, compile_schema
from sdk._tracker import FieldTracker

SUITE = Path(__file__).resolve().parents[1] / "data" / "json-schema-test-suite" / "draft2020-12"
OPTIONAL = SUITE / "optional"
REGEX_FILES = [OPTIONAL / "ecmascript-regex.json", OPTIONAL / "non-bmp-regex.json"]

Verdict = tuple[str, str, bool, bool]
"""(group, test, the suite's verdict, the tracker's)."""


def _chunkings(doc: str, rng: random.Random) -> list[list[str]]:
    out = [[doc], list(doc)]
    for _ in range(2):
        if len(doc) < 2:
            break
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


def _verdicts(path: Path, formats: Any) -> list[Verdict]:
    """One verdict for every test and chunking of the file."""
    out: list[Verdict] = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        compiled = compile_schema(group["schema"], formats=formats)
        for test in group["tests"]:
            doc = json.dumps(test["data"])
            rng = random.Random(f"{path.name}/{group['description']}/{test['description']}")
            where = (group["description"], test["description"], test["valid"])
            out.extend((*where, _valid(compiled, chunks)) for chunks in _chunkings(doc, rng))
    return out


@pytest.mark.parametrize("path", REGEX_FILES, ids=lambda p: p.stem)
def test_patterns_are_read_as_ecma_262(path: Path) -> None:
    wrong = [v for v in _verdicts(path, "annotate") if v[2] != v[3]]
    assert not wrong, "\n".join(map(str, wrong))
