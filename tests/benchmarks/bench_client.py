"""Client CPU per streamed token: fieldstream against openai-python and the bare httpx-sse floor.

    .venv/bin/python tests/benchmarks/bench_client.py [--doc weather|catalog] [--rounds 5]
        [--concurrency 1,32,256] [--rate 0] [--hold 256] [--contenders ...] [--breakdown]
        [--profile C]

A loopback OpenAI-compatible server (tests/integration/loopback_server.py, its own process, so
its CPU is not counted) streams the 177-token weather document recorded from the OpenAI API,
one token per server-sent event, in the recorded chunk format (role chunk, 177 content chunks,
finish chunk, usage chunk, ``[DONE]``). ``--doc catalog`` streams the field-dense document
instead, in the same format: ``{"items": [...]}``, 30 records of ``id``, ``name``, ``price``,
``tags`` (3 KB, 1,143 tokens, a value finished every ~4.7 tokens), what extraction and
tool-call arguments look like: it measures the per-value work where the weather document's
long strings measure the per-token work. In this one process, on asyncio, interleaved (the order
rotates each round), at each concurrency (that many streams at once, started together, as
``asyncio.gather`` over a batch does):

- **floor**: httpx + httpx-sse, ``json.loads`` of each event's data, nothing else;
- **fieldstream**: ``Client.stream(schema=Weather)`` (``Catalog``), every field event,
  ``result()`` (the final jsonschema + pydantic validation);
- **openai raw**: openai-python ``chat.completions.create(stream=True)``, every chunk (a pydantic
  ``ChatCompletionChunk`` each), no parsing of the document;
- **openai structured**: openai-python ``chat.completions.stream(response_format=Weather)``
  (``Catalog``),
  every event, ``get_final_completion()`` (partial JSON parse per chunk, the model at the end);
- **floor httpx2**, **fieldstream from_openai**: the floor over httpx2 (httpcore2), the HTTP
  library openai-python 3 uses, and fieldstream through ``Client.from_openai`` (so over httpx2
  too): what the transport alone changes.

Client CPU is ``time.process_time()`` (all threads of this process, not wall time) over a
measurement of whole streams, divided by the tokens read: the request, the response headers and
the connection pool are part of a token's cost. Tokens/s per core is its inverse. Medians over
the rounds. Every contender has its own HTTP client with room for 1,000 connections, so no
stream waits on a pool, and keeps at most 20 idle (httpx's default; fieldstream's own client
keeps 20 too). Not more: httpcore 1 (under httpx 0.28) spends time quadratic in the idle
connections on each request it assigns and each response it closes; with 256 kept alive, a
burst of 256 streams cost the floor ~410 µs of pool bookkeeping per token (httpcore2, under
httpx2, is linear). The socket reads are counted too (tokens per read, printed under each row
of results).

``--rate`` (tokens/s over all streams; default 0, unpaced): unpaced, the server writes each
event as soon as the last is in the kernel's buffer, so the client finds most of a stream waiting
at each read (tens of tokens per read): this measures the cost of the events themselves. Paced
(e.g. ``--rate 2500``), the server waits ``max(1 ms, concurrency / rate)`` after each event of a
stream, as a model's tokens arrive, and a client that keeps up reads one event per read: each
token then also pays a socket read and an event-loop wake-up.

Memory per open stream: in a fresh process per contender, two batches of ``--hold``/2 streams are
opened one after the other and left mid-document (the server stops after half the tokens and
waits for the client to go); the table shows what the second batch added to the traced Python
heap (``tracemalloc``; a separate pass) and to the RSS, per stream: the cost of one more open
stream, its connection included.

``--breakdown``: instead, fieldstream's cost in parts, from differences of interleaved medians:
the response read from a bare asyncio socket (``socket only``: the event loop's and the
kernel's share), the bytes read with httpx (``httpx raw``), fieldstream's backend alone
(events, chunks, deltas), the tracker over the same tokens without I/O.

``--profile C``: profile one contender (``--profile-contender``, default fieldstream) at
concurrency C with cProfile or pyinstrument (``--profile-with``) and print its self time by
layer (client_profile.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [
    str(ROOT),
    str(ROOT / "tests" / "integration"),
    str(ROOT / "tests" / "benchmarks"),
]

import httpx  # noqa: E402
import httpx2  # noqa: E402
import openai  # noqa: E402

from tests.benchmarks.client_contenders import (  # noqa: E402
    DOCUMENTS,
    EXTRAS,
    NAMES,
    PARTS,
    Contenders,
    Hold,
    command,
    wave,
)
from tests.benchmarks.client_profile import profile  # noqa: E402
from tests.integration.loopback_server import start  # noqa: E402


async def cpu_table(base_url: str, args: argparse.Namespace) -> dict[int, dict[str, list[float]]]:
    """µs of client CPU per token, per concurrency and contender, one value per round."""
    contenders = Contenders(base_url, DOCUMENTS[args.doc])
    tokens = contenders.tokens
    results: dict[int, dict[str, list[float]]] = {}
    try:
        for c in args.concurrency:
            # Enough streams per measurement for a few ms of CPU at concurrency 1.
            waves = max(1, 12 // c)
            cmd = command(c, args.rate, args.doc)
            names = args.contenders
            for name in names:  # warm-up: imports, caches, c connections in each pool
                await wave(contenders.run[name], cmd, c)
            per: dict[str, list[float]] = {name: [] for name in names}
            reads = dict.fromkeys(names, 0)
            for r in range(args.rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    gc.collect()
                    with _count_reads() as count:
                        t0 = time.process_time()
                        for _ in range(waves):
                            await wave(contenders.run[name], cmd, c)
                        cpu = time.process_time() - t0
                    per[name].append(cpu / (waves * c * tokens) * 1e6)
                    reads[name] += count[0]
            results[c] = per
            print(_row_line(c, per), flush=True)
            streams = args.rounds * waves * c
            print(
                "    tokens per socket read: "
                + "; ".join(f"{n} {streams * tokens / r:.2f}" for n, r in reads.items() if r),
                flush=True,
            )
    finally:
        await contenders.aclose()
    return results


@contextlib.contextmanager
def _count_reads() -> Iterator[list[int]]:
    """Counts the socket reads of every connection (anyio's asyncio protocol, which httpcore and
    httpcore2 both read through) while the block runs; a diagnostic, not timed."""
    from anyio._backends._asyncio import StreamProtocol

    count = [0]
    original = StreamProtocol.data_received

    def counted(self: StreamProtocol, data: bytes) -> None:
        count[0] += 1
        original(self, data)

    StreamProtocol.data_received = counted  # type: ignore[method-assign]
    try:
        yield count
    finally:
        StreamProtocol.data_received = original  # type: ignore[method-assign]


def _row_line(c: int, per: dict[str, list[float]]) -> str:
    parts = [
        f"{name} {statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]" for name, v in per.items()
    ]
    line = f"  concurrency {c}: " + "; ".join(parts) + " (µs/token, median [min-max])"
    paired = _paired(per, "fieldstream", "floor")
    if paired is not None:
        mid, low, high = paired
        line += f"\n    fieldstream / floor, round by round: {mid:.2f}x [{low:.2f}-{high:.2f}]"
    return line


def _paired(per: dict[str, list[float]], a: str, b: str) -> tuple[float, float, float] | None:
    """``a``'s cost over ``b``'s in each round (the two ran minutes, not hours, apart: the
    machine's load changes less within a round than across rounds), as median, min, max;
    ``None`` unless both ran."""
    if a not in per or b not in per or not per[a]:
        return None
    ratios = [x / y for x, y in zip(per[a], per[b], strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


async def memory_one(base_url: str, name: str, streams: int, doc: str) -> dict[str, float]:
    """In this process: what one more stream of ``name`` held half-way costs, in RSS and in
    traced Python heap. Two batches of ``streams // 2`` are opened one after the other and
    held; the figure is the growth from the first batch to both, per stream of the second (so
    memory the allocator kept from earlier streams is not taken for free)."""
    contenders = Contenders(base_url, DOCUMENTS[doc])
    run = contenders.run[name]
    half = streams // 2
    cmd = command(streams, 0, doc, hold_after=contenders.tokens // 2)
    try:
        for _ in range(2):  # warm-up: imports, caches, first-use code paths
            await wave(run, command(16, 0, doc), 16)
        out: dict[str, float] = {}
        for how in ("rss", "heap"):
            if how == "heap":
                tracemalloc.start()
            sizes = []
            tasks: list[asyncio.Future[None]] = []
            for _ in range(2):
                hold = Hold(contenders.hold_at(name), half)
                tasks += [asyncio.ensure_future(run(cmd, hold)) for _ in range(half)]
                await asyncio.wait_for(hold.all_held.wait(), 120)
                gc.collect()
                sizes.append(_rss() if how == "rss" else tracemalloc.get_traced_memory()[0])
            out[how] = (sizes[1] - sizes[0]) / half
            if how == "heap":
                tracemalloc.stop()
            for task in tasks:
                task.cancel()  # leave each stream mid-document: its connection is closed
            await asyncio.gather(*tasks, return_exceptions=True)
        return out
    finally:
        await contenders.aclose()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_table(
    base_url: str, streams: int, names: list[str], doc: str
) -> dict[str, dict[str, float]]:
    """Each contender in a fresh process, so that memory freed by one is not reused by the
    next."""
    out = {}
    for name in names:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--memory-one",
                name,
                "--hold",
                str(streams),
                "--url",
                base_url,
                "--doc",
                doc,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def print_tables(
    cpu: dict[int, dict[str, list[float]]], mem: dict[str, dict[str, float]] | None
) -> None:
    if cpu:
        print_cpu_tables(cpu)
    if mem:
        print("\n| memory per open stream (one more, held half-way) | traced Python heap | RSS |")
        print("|---|---:|---:|")
        for name, m in mem.items():
            print(f"| {name} | {m['heap'] / 1024:.1f} KiB | {m['rss'] / 1024:.1f} KiB |")


def print_cpu_tables(cpu: dict[int, dict[str, list[float]]]) -> None:
    med = {c: {n: statistics.median(v) for n, v in per.items()} for c, per in cpu.items()}
    cs = list(med)
    names = list(med[cs[0]])
    print(
        "\n| client CPU per token (median) | "
        + " | ".join(f"{c} stream{'s' * (c > 1)}" for c in cs)
        + " |"
    )
    print("|---|" + "---:|" * len(cs))
    for name in names:
        cells = []
        for c in cs:
            us = med[c][name]
            ratio = us / med[c]["floor"]
            cells.append(f"{us:.1f} µs ({ratio:.2f}x floor, {1e6 / us / 1000:.1f}k tok/s/core)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n| ratio | " + " | ".join(str(c) for c in cs) + " |")
    print("|---|" + "---:|" * len(cs))
    for a, b in [
        ("fieldstream", "floor"),
        ("openai structured", "fieldstream"),
        ("openai raw", "fieldstream"),
        ("fieldstream from_openai", "floor httpx2"),
        ("openai structured", "fieldstream from_openai"),
    ]:
        if a in names and b in names:
            cells = " | ".join(f"{med[c][a] / med[c][b]:.2f}x" for c in cs)
            print(f"| {a} / {b} | {cells} |")
    if "fieldstream" in names and "floor" in names:
        cells = " | ".join(
            "{:.2f}x [{:.2f}-{:.2f}]".format(*(_paired(cpu[c], "fieldstream", "floor") or ()))
            for c in cs
        )
        print(f"| fieldstream / floor, median of the rounds' ratios [min-max] | {cells} |")


def print_breakdown(cpu: dict[int, dict[str, list[float]]]) -> None:
    """fieldstream's µs per token by part, from the differences of the medians."""
    med = {c: {n: statistics.median(v) for n, v in per.items()} for c, per in cpu.items()}
    cs = list(med)
    rows = [
        (
            "event loop + kernel: the bytes from an asyncio socket (socket only)",
            lambda m: m["socket only"],
        ),
        (
            "HTTP: httpx, httpcore, h11, anyio (httpx raw - socket only)",
            lambda m: m["httpx raw"] - m["socket only"],
        ),
        (
            "event stream + chunk decoding (fieldstream backend - httpx raw)",
            lambda m: m["fieldstream backend"] - m["httpx raw"],
        ),
        (
            "tracker + parser + final validation, no I/O (tracker only)",
            lambda m: m["tracker only"],
        ),
        (
            "Stream machinery, the rest (fieldstream - backend - tracker)",
            lambda m: m["fieldstream"] - m["fieldstream backend"] - m["tracker only"],
        ),
        ("= fieldstream", lambda m: m["fieldstream"]),
        (
            "floor: httpx-sse + json.loads (floor - httpx raw)",
            lambda m: m["floor"] - m["httpx raw"],
        ),
        ("= floor", lambda m: m["floor"]),
    ]
    print("\n| µs/token (medians) | " + " | ".join(f"{c} streams" for c in cs) + " |")
    print("|---|" + "---:|" * len(cs))
    for label, part in rows:
        print(f"| {label} | " + " | ".join(f"{part(med[c]):.1f}" for c in cs) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", default="weather", choices=list(DOCUMENTS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", default="1,32,256")
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--hold", type=int, default=256)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--memory-only", action="store_true")
    parser.add_argument("--profile", type=int, metavar="C")
    parser.add_argument(
        "--profile-contender", default="fieldstream", choices=NAMES + EXTRAS + PARTS
    )
    parser.add_argument("--profile-with", default="cProfile", choices=["cProfile", "pyinstrument"])
    parser.add_argument(
        "--contenders",
        default=",".join(NAMES + EXTRAS),
        help="comma-separated, from: " + ", ".join(NAMES + EXTRAS + PARTS),
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="measure the parts of fieldstream's cost instead (no memory table)",
    )
    parser.add_argument("--memory-one", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.contenders = [n.strip() for n in args.contenders.split(",")]
    if args.breakdown:
        args.contenders = ["floor", "fieldstream", *PARTS]
        args.no_memory = True
    unknown = set(args.contenders) - set(NAMES + EXTRAS + PARTS)
    if unknown:
        parser.error(f"unknown contenders: {sorted(unknown)}")
    if args.memory_one:
        memory = asyncio.run(memory_one(args.url, args.memory_one, args.hold, args.doc))
        print(json.dumps(memory))
        return
    with start() as server:
        if args.profile:
            profile(server.base_url, args)
            return
        print(
            f"{args.doc}: {len(DOCUMENTS[args.doc].tokens)} tokens per stream, one per event; "
            f"rate {args.rate:g} tokens/s "
            f"(0 = unpaced); {args.rounds} rounds; openai {openai.__version__} "
            f"(over httpx2 {httpx2.__version__}), httpx {httpx.__version__}; "
            f"{os.cpu_count()} CPUs (shared)",
            flush=True,
        )
        cpu = {} if args.memory_only else asyncio.run(cpu_table(server.base_url, args))
        mem = (
            None
            if args.no_memory
            else memory_table(server.base_url, args.hold, args.contenders, args.doc)
        )
    if args.breakdown:
        print_breakdown(cpu)
    else:
        print_tables(cpu, mem)


if __name__ == "__main__":
    main()
