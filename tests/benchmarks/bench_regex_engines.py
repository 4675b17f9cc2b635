"""RE2 against the ``regex`` package for the final pattern check: ordinary and hostile patterns.

    .venv/bin/python tests/benchmarks/bench_regex_engines.py [--rounds 9] [--calls 2000]

Part 1, ordinary patterns (the kinds real-world schemas hold: identifiers, dates, e-mail,
semantic versions, URLs, a long free text): each pattern's final check, ``EcmaRegex.search``
as the tracker calls it, once through RE2 (``sdk/_regex/_linear.py``) and once through the
``regex`` package under the budget (the same object with RE2 taken away). The two are timed in
alternation, ``--rounds`` times ``--calls`` calls each; it prints the median microseconds per
call and the ratio RE2 / regex (below 1: RE2 is faster).

Part 3, the tracker: a document of 30 records, each with five patterned strings (slug, date,
e-mail, version, free text), fed to a ``FieldTracker`` in 4-character chunks (prefix checks at
every chunk, then the final checks): milliseconds per document with RE2 and without it (the
``regex`` package alone, under the budget), alternated, medians.

Part 2, the issue's hostile pattern ``^(a|aa)+$`` on ``"a" * n + "!"``: RE2's time per call
against the ``regex`` package's (which runs out of its budget from about n = 30 on).
The machine is shared: read the ratios, not the microseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import sdk._regex._ecma
from sdk import FieldTracker
from sdk._regex._budget import BudgetSpent
from sdk._regex._ecma import EcmaRegex, compile_ecma
from sdk._regex._linear import available

ORDINARY = [
    ("identifier", "^[a-z][a-z0-9_-]{0,63}$", "order_item-42"),
    ("date", "^\\d{4}-\\d{2}-\\d{2}$", "2026-12-01"),
    ("email", "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$", "ada.lovelace@example.org"),
    (
        "semver",
        "^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-[0-9A-Za-z.-]+)?$",
        "12.4.1-rc.2",
    ),
    ("url", "^https?://[^\\s/$.?#].[^\\s]*$", "https://example.org/a/b?c=d#e"),
    ("word search", "\\bcat\\b", "the quick brown fox jumps over the lazy cat today"),
    ("long text", "^[^<>]*$", "lorem ipsum dolor sit amet, " * 100),
]


def _without_re2(compiled: EcmaRegex) -> EcmaRegex:
    return EcmaRegex(compiled.source, compiled._exact, compiled._loose, None)


def _per_call(compiled: EcmaRegex, text: str, calls: int) -> float:
    search = compiled.search
    t = time.perf_counter()
    for _ in range(calls):
        search(text)
    return (time.perf_counter() - t) / calls * 1e6


def ordinary(rounds: int, calls: int) -> None:
    print(f"{'pattern':12} {'len':>5} {'RE2 us':>8} {'regex us':>9} {'RE2/regex':>10}")
    ratios = []
    for name, pattern, text in ORDINARY:
        fast = compile_ecma(pattern)
        assert fast._linear is not None, pattern
        slow = _without_re2(fast)
        assert fast.search(text) == slow.search(text)
        a: list[float] = []
        b: list[float] = []
        for _ in range(rounds):
            a.append(_per_call(fast, text, calls))
            b.append(_per_call(slow, text, calls))
        ma, mb = statistics.median(a), statistics.median(b)
        ratios.append(ma / mb)
        print(f"{name:12} {len(text):5} {ma:8.2f} {mb:9.2f} {ma / mb:10.2f}")
    middle = statistics.median(ratios)
    print(f"median ratio RE2/regex over the {len(ratios)} patterns: {middle:.2f}")


def hostile(rounds: int) -> None:
    fast = compile_ecma("^(a|aa)+$")
    slow = _without_re2(fast)
    print(f"\n{'n':>6} {'RE2 us':>10} {'regex':>24}")
    for n in (20, 24, 28, 32, 40, 1_000, 100_000):
        text = "a" * n + "!"
        re2_us = statistics.median(_per_call(fast, text, 20) for _ in range(rounds))
        if n > 40:
            print(f"{n:6} {re2_us:10.1f} {'(not tried)':>24}")
            continue
        t = time.perf_counter()
        try:
            slow.search(text)
            what = f"{(time.perf_counter() - t) * 1e6:.0f} us"
        except BudgetSpent:
            what = f"budget spent after {(time.perf_counter() - t) * 1e3:.0f} ms"
        print(f"{n:6} {re2_us:10.1f} {what:>24}")


RECORD = {
    "type": "object",
    "properties": {
        "slug": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"},
        "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"},
        "version": {"type": "string", "pattern": "^\\d+\\.\\d+\\.\\d+$"},
        "note": {"type": "string", "pattern": "^[^<>]*$"},
    },
}


def _document() -> str:
    rows = [
        {
            "slug": f"item-{i}-blue-widget",
            "date": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
            "email": f"buyer{i}@example.org",
            "version": f"{i}.{i % 7}.{i % 3}",
            "note": "deliver to the back door, ring twice " * 3,
        }
        for i in range(30)
    ]
    return json.dumps(rows)


def _feed(schema: Any, doc: str) -> float:
    t = time.perf_counter()
    tracker = FieldTracker(schema)
    for i in range(0, len(doc), 4):
        tracker.feed(doc[i : i + 4])
    tracker.close()
    return (time.perf_counter() - t) * 1e3


def tracker(rounds: int) -> None:
    doc = _document()
    with_re2 = {"type": "array", "items": RECORD}
    original = sdk._regex._ecma.compile_linear
    sdk._regex._ecma.compile_linear = lambda pattern: None  # type: ignore[assignment]
    try:
        without = {"type": "array", "items": RECORD, "title": "no RE2"}  # its own compilation
        FieldTracker(without)
    finally:
        sdk._regex._ecma.compile_linear = original
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        a.append(_feed(with_re2, doc))
        b.append(_feed(without, doc))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"\ntracker, {len(doc)} characters in 4-character chunks, 150 patterned strings:")
    print(f"  with RE2 {ma:.1f} ms, without {mb:.1f} ms per document; ratio {ma / mb:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    if not available():
        raise SystemExit("google-re2 is not installed: pip install -e '.[re2]'")
    ordinary(args.rounds, args.calls)
    hostile(args.rounds)
    tracker(args.rounds)


if __name__ == "__main__":
    main()
