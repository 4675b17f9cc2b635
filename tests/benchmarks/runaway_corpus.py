"""The runaway checks' false-alarm corpus: real, valid JSON documents, in real layouts.

- every ``.json`` file under ``tests/data`` as it is written (the JSON-Schema-Test-Suite's
  test files and remotes, SchemaStore's and Kubernetes' schemas, the partial-parser cases, the
  JSONTestSuite ``y_`` files that parse): real documents in their authors' layouts, long
  ``description`` strings, enums, deep nesting;
- every instance the JSON-Schema-Test-Suite marks valid (``"valid": true``), alone;
- the documents the recorded OpenAI streams (``tests/data/openai_sse``) carry: model output;
- each of these re-laid out as ``json.dumps`` writes it with ``indent=2``, ``indent=4`` and
  ``indent="\\t"`` (the layouts a model learnt from).

:func:`documents` yields ``(name, text)``; :func:`false_alarms` feeds each one, in chunks of a
few characters (a token's size), to a :class:`~sdk.FieldTracker` that accepts any JSON, under
the given limits, and returns the documents that raised :class:`~sdk.RunawayOutput`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from sdk import FieldTracker, RunawayLimits, RunawayOutput
from sdk._trackers._runaway import DEFAULT_RUNAWAY

DATA = Path(__file__).resolve().parents[1] / "data"

__all__ = ["DATA", "documents", "false_alarms"]


def _strict(text: str) -> object:
    """``json.loads`` without ``NaN``/``Infinity`` (not JSON) and duplicate keys (which the
    tracker refuses): such texts are not in the corpus."""

    def refuse(name: str) -> object:
        raise ValueError(name)

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len({k for k, _ in pairs}) < len(pairs):
            raise ValueError("a duplicate key")  # the tracker refuses it
        return dict(pairs)

    return json.loads(text, parse_constant=refuse, object_pairs_hook=unique)


def _files() -> Iterator[tuple[str, str]]:
    for path in sorted(DATA.rglob("*.json")):
        try:
            text = path.read_text("utf-8")
            _strict(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue  # the JSONTestSuite's n_/i_ files, and y_ files Python reads otherwise
        yield str(path.relative_to(DATA)), text


def _valid_instances() -> Iterator[tuple[str, str]]:
    for path in sorted((DATA / "json-schema-test-suite").glob("draft*/**/*.json")):
        groups = json.loads(path.read_text("utf-8"))
        if not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            for t, test in enumerate(group.get("tests", [])):
                if test.get("valid") is True:
                    text = json.dumps(test["data"])
                    try:
                        _strict(text)
                    except ValueError:
                        continue
                    yield f"{path.relative_to(DATA)}#{g}.{t}", text


def _recorded_outputs() -> Iterator[tuple[str, str]]:
    for path in sorted((DATA / "openai_sse").glob("*.sse")):
        texts: dict[int, list[str]] = {}
        for line in path.read_text("utf-8").splitlines():
            if not line.startswith("data: {"):
                continue
            for choice in json.loads(line[6:]).get("choices", []):
                content = (choice.get("delta") or {}).get("content")
                if content:
                    texts.setdefault(choice.get("index", 0), []).append(content)
        for index, pieces in texts.items():
            text = "".join(pieces)
            try:
                _strict(text)
            except ValueError:
                continue  # cut by the token limit, or a refusal
            yield f"{path.relative_to(DATA)}[{index}]", text


def documents() -> Iterator[tuple[str, str]]:
    """Every document of the corpus, as ``(name, text)``."""
    for name, text in (*_files(), *_valid_instances(), *_recorded_outputs()):
        yield name, text
        value = json.loads(text)
        try:  # 1e400 reads as inf, which JSON cannot write back
            json.dumps(value, allow_nan=False)
            finite = True
        except ValueError:
            finite = False
        for indent in (2, 4, "\t"):
            laid_out = json.dumps(value, indent=indent, allow_nan=False) if finite else ""
            if laid_out:
                yield f"{name} (indent={indent!r})", laid_out


def false_alarms(
    limits: RunawayLimits = DEFAULT_RUNAWAY, chunk: int = 4
) -> tuple[int, list[tuple[str, RunawayOutput]]]:
    """How many documents were read, and those that raised a runaway (with the error)."""
    seen = 0
    alarms: list[tuple[str, RunawayOutput]] = []
    for name, text in documents():
        seen += 1
        tracker = FieldTracker({}, runaway=limits)
        try:
            for i in range(0, len(text), chunk):
                tracker.feed(text[i : i + chunk])
            tracker.close()
        except RunawayOutput as exc:
            alarms.append((name, exc))
    return seen, alarms
