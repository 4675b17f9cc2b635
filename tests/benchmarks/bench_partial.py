"""Benchmark: streaming a JSON document through ``partial`` and through its peers.

Run: ``python tests/benchmarks/bench_partial.py`` (``--quick`` for a short run; ``--help``).

Generated, realistic documents (nested objects, arrays of objects, long strings with escapes and
non-ASCII text, numbers of every shape) of about 1 KB, 10 KB, 100 KB and 1 MB are streamed in
4- and 16-byte chunks (the document is ASCII-heavy, so these are chunks of UTF-8 bytes; the str
consumers get the same cuts, decoded). Each parser sees the whole stream and does what a caller
needing the partial value (or the events) after each chunk would do:

- ``partial`` events only: ``feed(chunk)`` per chunk, ``close()``.
- ``partial`` events + snapshot: also ``snapshot()`` after every chunk.
- naive re-parse: append the chunk, close the open strings and brackets, ``json.loads``.
- partial-json-parser: ``loads(buffer)`` after every chunk.
- jiter: ``from_json(buffer, partial_mode="trailing-strings")`` after every chunk.
- pydantic-core: ``from_json(buffer, allow_partial=True)`` after every chunk.
- ijson (yajl2_c backend, push interface ``parse_coro``): ``send(chunk)``; events only.
- json-stream (Rust tokenizer when installed): ``to_standard_types(load(chunks))``; it pulls the
  chunks itself and shows no value before the end.

All runs are in one process, interleaved (each round runs every parser once on every size and
chunking), and the table shows the median. Re-parsing peers are quadratic: a run that passes the
time budget (``--budget``, default 20 s) is stopped and reported as ``n/a (>20 s)``; nothing is
extrapolated. The ratio is to one ``json.loads`` of the whole document (its median over many
runs); growth is the time ratio between consecutive sizes (10x the input each).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout

import ijson  # type: ignore[import-untyped]
import jiter
import json_stream  # type: ignore[import-untyped]
import pydantic_core
from partial_json_parser import loads as pjp_loads  # type: ignore[import-untyped]

import partial

SIZES = {"1KB": 1_000, "10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000}

# --- documents -------------------------------------------------------------------------------

WORDS = (
    "the quick brown fox jumps over lazy dog naïve café Zoë Łódź 東京 Москва żółw ☃ "
    "résumé straße 🙂 data stream field value model token schema".split()
)


def number(rng: random.Random) -> Any:
    """Numbers of every shape JSON has: ints, negatives, zero, fractions, exponents, big ints."""
    shape = rng.randrange(8)
    if shape == 0:
        return rng.randrange(0, 1000)
    if shape == 1:
        return -rng.randrange(1, 10**6)
    if shape == 2:
        return round(rng.uniform(-1000, 1000), rng.randrange(1, 6))
    if shape == 3:
        return rng.uniform(1, 9) * 10 ** rng.randrange(-300, -5)  # 1.234e-120
    if shape == 4:
        return rng.uniform(1, 9) * 10 ** rng.randrange(20, 300)  # 5.6e+200
    if shape == 5:
        return rng.randrange(10**20, 10**30)  # beyond 64 bits
    if shape == 6:
        return 0
    return rng.random()


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    text = " ".join(words)
    # Escapes: quotes, backslashes, newlines, tabs and a control character.
    extras = ['"quoted"', "C:\\path\\to", "line\nbreak", "tab\there", "bell\x07"]
    return text + " " + rng.choice(extras) + "."


def item(rng: random.Random, i: int) -> dict[str, Any]:
    return {
        "id": i,
        "name": sentence(rng, 3),
        "active": rng.random() < 0.5,
        "score": number(rng),
        "ratio": number(rng),
        "tags": [rng.choice(WORDS) for _ in range(rng.randrange(0, 5))],
        "dims": {"w": number(rng), "h": number(rng), "unit": rng.choice(["cm", "in", None])},
        "history": [{"t": number(rng), "v": number(rng)} for _ in range(rng.randrange(0, 3))],
        "description": sentence(rng, rng.randrange(5, 40)),
    }


def document(target: int, seed: int = 2) -> str:
    """A document of about ``target`` UTF-8 bytes (a little over)."""
    rng = random.Random(seed)
    doc: dict[str, Any] = {
        "meta": {"version": "1.2.0", "generated": True, "count": 0, "notes": None},
        "summary": sentence(rng, 20),
        "items": [],
    }
    size = len(json.dumps(doc, ensure_ascii=False).encode())
    while size < target:
        new = item(rng, len(doc["items"]))
        doc["items"].append(new)
        size += len(json.dumps(new, ensure_ascii=False).encode()) + 2
    doc["meta"]["count"] = len(doc["items"])
    return json.dumps(doc, ensure_ascii=False)


def chunks_of(doc: str, size: int) -> tuple[list[str], list[bytes]]:
    """The document cut every ``size`` UTF-8 bytes: as bytes, and as str (a character cut in
    two goes whole into the chunk where it starts, so both lists have the same length)."""
    data = doc.encode()
    as_bytes = [data[i : i + size] for i in range(0, len(data), size)]
    as_str: list[str] = []
    carry = b""
    for piece in as_bytes:
        piece = carry + piece
        text = piece.decode("utf-8", errors="ignore")
        # keep an incomplete trailing sequence for the next chunk
        cut = len(text.encode())
        carry = piece[cut:]
        as_str.append(text)
    as_str[-1] += carry.decode()
    return as_str, as_bytes


# --- the parsers -------------------------------------------------------------------------------


class OverBudget(Exception):
    pass


Runner = Callable[[list[str], list[bytes], float], None]
"""A full stream: (str chunks, bytes chunks, deadline) -> None; raises OverBudget."""


def check(i: int, deadline: float) -> None:
    if i & 63 == 0 and time.perf_counter() > deadline:
        raise OverBudget


def run_partial(strs: list[str], _: list[bytes], deadline: float) -> None:
    p = partial.Parser()
    for i, chunk in enumerate(strs):
        p.feed(chunk)
        check(i, deadline)
    p.close()


def run_partial_snapshot(strs: list[str], _: list[bytes], deadline: float) -> None:
    p = partial.Parser()
    for i, chunk in enumerate(strs):
        p.feed(chunk)
        p.snapshot()
        check(i, deadline)
    p.close()


TOKEN = re.compile(r'"(?:[^"\\]|\\.)*("?)|[\[\]{}]')


def naive_close(buffer: str) -> str:
    """What hand-written streaming code does: close the open string and brackets."""
    stack: list[str] = []
    in_string = False
    for m in TOKEN.finditer(buffer):
        tok = m.group()
        if tok[0] == '"':
            in_string = not m.group(1)
        elif tok in "[{":
            stack.append("]" if tok == "[" else "}")
        elif stack:
            stack.pop()
    return buffer + ('"' if in_string else "") + "".join(reversed(stack))


def run_naive(strs: list[str], _: list[bytes], deadline: float) -> None:
    buffer = ""
    value: Any = None
    for i, chunk in enumerate(strs):
        buffer += chunk
        try:
            value = json.loads(naive_close(buffer))
        except ValueError:
            pass  # keep the previous value
        check(i, deadline)
    del value


def run_partial_json_parser(strs: list[str], _: list[bytes], deadline: float) -> None:
    buffer = ""
    for i, chunk in enumerate(strs):
        buffer += chunk
        try:
            pjp_loads(buffer)
        except Exception:  # it raises on some prefixes ("-")
            pass
        check(i, deadline)


def run_jiter(_: list[str], chunks: list[bytes], deadline: float) -> None:
    buffer = b""
    for i, chunk in enumerate(chunks):
        buffer += chunk
        try:
            jiter.from_json(buffer, partial_mode="trailing-strings")
        except ValueError:
            pass  # a cut multibyte character or a lone "-"
        check(i, deadline)


def run_pydantic_core(_: list[str], chunks: list[bytes], deadline: float) -> None:
    buffer = b""
    for i, chunk in enumerate(chunks):
        buffer += chunk
        try:
            pydantic_core.from_json(buffer, allow_partial=True)
        except ValueError:
            pass
        check(i, deadline)


def run_ijson(_: list[str], chunks: list[bytes], deadline: float) -> None:
    backend = ijson.get_backend("yajl2_c")
    events = ijson.sendable_list()
    coro = backend.parse_coro(events)
    for i, chunk in enumerate(chunks):
        coro.send(chunk)
        events.clear()
        check(i, deadline)
    coro.close()


def run_json_stream(_: list[str], chunks: list[bytes], deadline: float) -> None:
    def source() -> Any:
        for i, chunk in enumerate(chunks):
            check(i, deadline)
            yield chunk

    json_stream.to_standard_types(json_stream.load(source()))


PARSERS: dict[str, Runner] = {
    "partial (events)": run_partial,
    "partial (events + snapshot per chunk)": run_partial_snapshot,
    "naive close + json.loads re-parse": run_naive,
    "partial-json-parser": run_partial_json_parser,
    'jiter partial_mode="trailing-strings"': run_jiter,
    "pydantic-core from_json(allow_partial=True)": run_pydantic_core,
    "ijson (yajl2_c, push)": run_ijson,
    "json-stream": run_json_stream,
}


# --- measuring ---------------------------------------------------------------------------------


def loads_time(doc: str) -> float:
    """Median time of one json.loads of the whole document."""
    n = max(3, min(2000, 2_000_000 // max(1, len(doc))))
    times = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(n):
            json.loads(doc)
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def verify(doc: str) -> None:
    """Untimed: partial's result is json.loads's (a benchmark of a wrong parser is worthless)."""
    p = partial.Parser()
    for c in chunks_of(doc, 7)[1]:
        p.feed(c)
    assert p.close() == json.loads(doc)


def fmt_time(t: float) -> str:
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.1f} ms"
    return f"{t * 1e6:.0f} µs"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1KB,10KB,100KB,1MB", help="from " + ",".join(SIZES))
    ap.add_argument("--chunks", default="4,16", help="chunk sizes in bytes")
    ap.add_argument("--repeats", type=int, default=5, help="rounds (median taken)")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds allowed for one run")
    ap.add_argument("--parsers", default="", help="comma-separated substrings to select")
    ap.add_argument("--quick", action="store_true", help="10KB,100KB; 3 rounds; 5 s budget")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats, args.budget = "10KB,100KB", 3, 5.0
    sizes = [s.strip() for s in args.sizes.split(",")]
    chunk_sizes = [int(c) for c in args.chunks.split(",")]
    parsers = {
        name: run
        for name, run in PARSERS.items()
        if not args.parsers or any(s.strip() in name for s in args.parsers.split(","))
    }

    docs = {s: document(SIZES[s]) for s in sizes}
    for doc in docs.values():
        verify(doc)
    base = {s: loads_time(doc) for s, doc in docs.items()}
    cuts = {(s, c): chunks_of(docs[s], c) for s in sizes for c in chunk_sizes}

    # Warm-up, untimed: first calls pay for imports, caches and allocator growth.
    strs, chunks = chunks_of(document(SIZES["1KB"], seed=1), 16)
    for run in parsers.values():
        run(strs, chunks, time.perf_counter() + args.budget)

    times: dict[tuple[str, str, int], list[float]] = {}
    over: set[tuple[str, str, int]] = set()
    for round_ in range(args.repeats):
        for s in sizes:
            for c in chunk_sizes:
                strs, chunks = cuts[(s, c)]
                for name, run in parsers.items():
                    key = (name, s, c)
                    if key in over:
                        continue
                    gc.collect()
                    start = time.perf_counter()
                    try:
                        run(strs, chunks, start + args.budget)
                    except OverBudget:
                        over.add(key)
                        continue
                    times.setdefault(key, []).append(time.perf_counter() - start)
        print(f"round {round_ + 1}/{args.repeats} done", file=sys.stderr)

    print(
        f"Python {sys.version.split()[0]}, {args.repeats} rounds, median; budget {args.budget:g} s"
    )
    print()
    print(
        "one json.loads of the whole document: "
        + ", ".join(f"{s} ({len(docs[s].encode()):,} B): {fmt_time(base[s])}" for s in sizes)
    )
    growth_cols = [f"{a}→{b}" for a, b in itertools.pairwise(sizes)]
    for c in chunk_sizes:
        print()
        print(f"**{c}-byte chunks** — total time for the stream (x one json.loads)")
        print()
        print(
            "| parser | " + " | ".join(sizes) + " | growth " + " | growth ".join(growth_cols) + " |"
        )
        print("|---|" + "---:|" * (len(sizes) + len(growth_cols)))
        for name in parsers:
            cells = []
            med: dict[str, float | None] = {}
            for s in sizes:
                key = (name, s, c)
                if key in over:
                    med[s] = None
                    cells.append(f"n/a (>{args.budget:g} s)")
                else:
                    t = statistics.median(times[key])
                    med[s] = t
                    cells.append(f"{fmt_time(t)} ({t / base[s]:,.0f}x)")
            for a, b in itertools.pairwise(sizes):
                ta, tb = med[a], med[b]
                cells.append(f"{tb / ta:.1f}x" if ta and tb else "n/a")
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
