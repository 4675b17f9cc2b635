"""Client CPU per streamed token: fieldstream against openai-python and the bare httpx-sse floor.

    .venv/bin/python tests/benchmarks/bench_client.py [--rounds 5] [--concurrency 1,32,256]
        [--rate 2500] [--hold 256] [--profile C]

A loopback OpenAI-compatible server (tests/integration/loopback_server.py, its own process, so
its CPU is not counted) streams the 177-token weather document recorded from the OpenAI API,
one token per server-sent event, in the recorded chunk format (role chunk, 177 content chunks,
finish chunk, usage chunk, ``[DONE]``). In this one process, on asyncio, interleaved (the order
rotates each round), at each concurrency:

- **floor**: httpx + httpx-sse, ``json.loads`` of each event's data, nothing else;
- **fieldstream**: ``Client.stream(schema=Weather)``, every field event, ``result()`` (the final
  jsonschema + pydantic validation);
- **openai raw**: openai-python ``chat.completions.create(stream=True)``, every chunk (a pydantic
  ``ChatCompletionChunk`` each), no parsing of the document;
- **openai structured**: openai-python ``chat.completions.stream(response_format=Weather)``,
  every event, ``get_final_completion()`` (partial JSON parse per chunk, the model at the end).

Client CPU is ``time.process_time()`` (all threads of this process, not wall time) over a
measurement of whole streams, divided by the tokens read: the request, the response headers and
the connection pool are part of a token's cost. Tokens/s per core is its inverse. Medians over
the rounds. Every contender has its own HTTP client with room for 1,000 connections kept alive,
so no stream waits on a pool and the connections are reused from round to round.

Pacing (``--rate``, tokens/s over all streams, default 2500; 0 = as fast as the server can
write): a real server sends each stream's tokens milliseconds apart, so a client that keeps up
reads one event per socket read. The server waits ``max(1 ms, concurrency / rate)`` after each
event of a stream, below what the slowest contender can take, so each contender does one read
per event. Unpaced, a server faster than the client makes it read several events at once, and
the slower a contender the cheaper its reads look.

Memory per open stream: ``--hold`` streams of each contender are opened and left mid-document
(the server stops after half the tokens and waits), in a fresh process per contender; the table
shows the growth of the traced Python heap (``tracemalloc``) and of the RSS, divided by the
number of streams, over a baseline taken after the same number of full streams.

``--profile C``: instead, profile fieldstream alone at concurrency C (cProfile) and print where
its own time goes, by layer (self time; a built-in's time goes to the module that called it).
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
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

import httpx  # noqa: E402
import httpx2  # noqa: E402
import openai  # noqa: E402
from httpx_sse import EventSource  # noqa: E402
from loopback_server import WEATHER_TEXT, WEATHER_TOKENS, start  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from sdk._client import Client  # noqa: E402
from sdk._events import FieldEvent  # noqa: E402
from sdk._tracker import FieldTracker  # noqa: E402


class Current(BaseModel):
    temperature: str
    condition: str
    humidity: str
    windSpeed: str  # the document's own keys
    windDirection: str


class Day(BaseModel):
    day: str
    high: str
    low: str
    condition: str


class Weather(BaseModel):
    location: str
    weather: Current
    forecast: list[Day]


EXPECTED = Weather.model_validate_json(WEATHER_TEXT)
TOKENS = len(WEATHER_TOKENS)
NAMES = ["floor", "fieldstream", "openai raw", "openai structured"]
EXTRAS = ["floor httpx2", "fieldstream from_openai"]
"""The same two over httpx2/httpcore2, the transport openai-python 3 uses (see the module
docstring)."""


def _fields_after(tokens: int) -> int:
    """How many field events fieldstream has yielded once ``tokens`` tokens are read."""
    tracker = FieldTracker(Weather)
    return sum(
        isinstance(ev, FieldEvent) for t in WEATHER_TOKENS[:tokens] for ev in tracker.feed(t)
    )


class Hold:
    """Stops each stream at its ``at``-th unit (token, chunk or field event) until released."""

    def __init__(self, at: int, streams: int) -> None:
        self.at = at
        self.waiting = streams
        self.all_held = asyncio.Event()
        self.release = asyncio.Event()

    async def reached(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.all_held.set()
        await self.release.wait()


class Contenders:
    """One client per contender, all against the same server; ``run[name](command, hold)``
    reads one whole stream (or holds it mid-document)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.limits = dict(max_connections=1000, max_keepalive_connections=1000)
        self.floor_http = httpx.AsyncClient(limits=httpx.Limits(**self.limits), timeout=120)
        self.fs_http = httpx.AsyncClient(limits=httpx.Limits(**self.limits), timeout=120)
        self.fs = Client(base_url=base_url, model="bench", http_client=self.fs_http)
        self.oai = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="bench",
            max_retries=0,
            timeout=120,
            http_client=openai.DefaultAsyncHttpxClient(limits=httpx2.Limits(**self.limits)),
        )
        self.floor2_http = httpx2.AsyncClient(limits=httpx2.Limits(**self.limits), timeout=120)
        self.oai2 = openai.AsyncOpenAI(
            base_url=base_url,
            api_key="bench",
            timeout=120,
            http_client=openai.DefaultAsyncHttpxClient(limits=httpx2.Limits(**self.limits)),
        )
        self.fs2 = Client.from_openai(self.oai2, model="bench")
        self.fs_held = _fields_after(TOKENS // 2)
        self.run: dict[str, Callable[[str, Hold | None], Awaitable[None]]] = {
            "floor": lambda cmd, hold: self.floor(self.floor_http, cmd, hold),
            "fieldstream": lambda cmd, hold: self.fieldstream(self.fs, cmd, hold),
            "openai raw": self.openai_raw,
            "openai structured": self.openai_structured,
            "floor httpx2": lambda cmd, hold: self.floor(self.floor2_http, cmd, hold),
            "fieldstream from_openai": lambda cmd, hold: self.fieldstream(self.fs2, cmd, hold),
        }

    async def aclose(self) -> None:
        await self.floor_http.aclose()
        await self.floor2_http.aclose()
        await self.fs.aclose()
        await self.fs_http.aclose()
        await self.oai.close()
        await self.oai2.close()

    async def floor(self, http: Any, command: str, hold: Hold | None) -> None:
        body = {"model": "bench", "messages": [{"role": "user", "content": command}]}
        body["stream"] = True
        url = self.base_url + "/chat/completions"
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        n = 0
        async with http.stream("POST", url, json=body, headers=headers) as response:
            async for event in EventSource(response).aiter_sse():
                if event.data != "[DONE]":
                    json.loads(event.data)
                    n += 1
                    if hold is not None and n == hold.at:
                        await hold.reached()
        assert n == TOKENS + 3, n  # role, content, finish and usage chunks

    async def fieldstream(self, client: Client, command: str, hold: Hold | None) -> None:
        messages = [{"role": "user", "content": command}]
        n = 0
        async with client.stream(messages=messages, schema=Weather) as stream:
            async for _ in stream:
                n += 1
                if hold is not None and n == hold.at:
                    await hold.reached()
            assert await stream.result() == EXPECTED

    async def openai_raw(self, command: str, hold: Hold | None) -> None:
        messages: Any = [{"role": "user", "content": command}]
        n = 0
        stream = await self.oai.chat.completions.create(
            model="bench", messages=messages, stream=True
        )
        async with stream:
            async for _ in stream:
                n += 1
                if hold is not None and n == hold.at:
                    await hold.reached()
        assert n == TOKENS + 3, n

    async def openai_structured(self, command: str, hold: Hold | None) -> None:
        messages: Any = [{"role": "user", "content": command}]
        n = 0
        async with self.oai.chat.completions.stream(
            model="bench", messages=messages, response_format=Weather
        ) as stream:
            async for event in stream:
                if event.type == "content.delta":
                    n += 1
                    if hold is not None and n == hold.at:
                        await hold.reached()
            completion = await stream.get_final_completion()
        assert completion.choices[0].message.parsed == EXPECTED

    def hold_at(self, name: str) -> int:
        """The unit count at which a stream of ``name`` is half-way through the document."""
        if name.startswith("fieldstream"):
            return self.fs_held
        if name == "openai structured":
            return TOKENS // 2
        return TOKENS // 2 + 1  # chunks: the role chunk comes first


def command(concurrency: int, rate: float, **extra: Any) -> str:
    interval = 0.0 if rate <= 0 else max(0.001, concurrency / rate)
    return json.dumps({"doc": "weather", "interval": interval, **extra})


async def wave(run: Callable[[str, Hold | None], Awaitable[None]], cmd: str, n: int) -> None:
    await asyncio.gather(*(run(cmd, None) for _ in range(n)))


async def cpu_table(base_url: str, args: argparse.Namespace) -> dict[int, dict[str, list[float]]]:
    """µs of client CPU per token, per concurrency and contender, one value per round."""
    contenders = Contenders(base_url)
    results: dict[int, dict[str, list[float]]] = {}
    try:
        for c in args.concurrency:
            # Enough streams per measurement for a few ms of CPU at concurrency 1.
            waves = max(1, 12 // c)
            cmd = command(c, args.rate)
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
                    per[name].append(cpu / (waves * c * TOKENS) * 1e6)
                    reads[name] += count[0]
            results[c] = per
            print(_row_line(c, per), flush=True)
            streams = args.rounds * waves * c
            print(
                "    tokens per socket read: "
                + "; ".join(f"{n} {streams * TOKENS / r:.2f}" for n, r in reads.items()),
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
    return f"  concurrency {c}: " + "; ".join(parts) + " (µs/token, median [min-max])"


async def memory_one(base_url: str, name: str, streams: int) -> dict[str, float]:
    """In this process: the growth of RSS and of the traced heap with ``streams`` streams of
    ``name`` held half-way, per stream."""
    contenders = Contenders(base_url)
    run = contenders.run[name]
    try:
        await wave(run, command(streams, 0), streams)  # the pool holds `streams` connections
        await wave(run, command(streams, 0), streams)
        out: dict[str, float] = {}
        for how in ("rss", "heap"):
            gc.collect()
            if how == "heap":
                tracemalloc.start()
            before = _rss() if how == "rss" else tracemalloc.get_traced_memory()[0]
            hold = Hold(contenders.hold_at(name), streams)
            cmd = command(streams, 0, hold_after=TOKENS // 2)
            tasks = [asyncio.ensure_future(run(cmd, hold)) for _ in range(streams)]
            await asyncio.wait_for(hold.all_held.wait(), 120)
            gc.collect()
            after = _rss() if how == "rss" else tracemalloc.get_traced_memory()[0]
            out[how] = (after - before) / streams
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


def memory_table(base_url: str, streams: int, names: list[str]) -> dict[str, dict[str, float]]:
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
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def print_tables(
    cpu: dict[int, dict[str, list[float]]], mem: dict[str, dict[str, float]] | None, hold: int
) -> None:
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
    if mem:
        print(f"\n| memory per open stream ({hold} held half-way) | traced Python heap | RSS |")
        print("|---|---:|---:|")
        for name in names:
            m = mem[name]
            print(f"| {name} | {m['heap'] / 1024:.1f} KiB | {m['rss'] / 1024:.1f} KiB |")


def profile(base_url: str, concurrency: int, rate: float, name: str) -> None:
    import cProfile
    import pstats

    async def main() -> None:
        contenders = Contenders(base_url)
        cmd = command(concurrency, rate)
        run = contenders.run[name]
        await wave(run, cmd, concurrency)
        waves = max(1, 48 // concurrency)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(waves):
            await wave(run, cmd, concurrency)
        profiler.disable()
        await contenders.aclose()
        stats = pstats.Stats(profiler)
        print_layers(stats, waves * concurrency * TOKENS)
        if os.environ.get("BENCH_TOP"):
            stats.sort_stats("tottime").print_stats(int(os.environ["BENCH_TOP"]))

    asyncio.run(main())


LAYERS = [
    ("transport: h11", ("/h11/",)),
    ("transport: httpcore", ("/httpcore/",)),
    ("transport: httpx", ("/httpx/",)),
    ("transport: httpcore2", ("/httpcore2/",)),
    ("transport: httpx2", ("/httpx2/",)),
    ("openai-python", ("/openai/",)),
    ("transport: anyio streams", ("/anyio/",)),
    ("SSE parsing: httpx-sse", ("/httpx_sse/",)),
    ("SSE: sdk/_http/_sse.py", ("sdk/_http/_sse.py",)),
    ("chunk decoding: sdk/_http/_chunks.py (+ json)", ("sdk/_http/_chunks.py", "/json/")),
    ("backend generator: sdk/_http/_openai.py", ("sdk/_http/_openai.py",)),
    ("Stream machinery: sdk/_stream.py", ("sdk/_stream.py",)),
    ("dispatch: sdk/_dispatch.py", ("sdk/_dispatch.py",)),
    ("tracker: sdk/_tracker.py, sdk/_schema", ("sdk/_tracker.py", "sdk/_schema/")),
    ("parser: partial/", ("partial/",)),
    ("sdk other (events, backend, client, request)", ("/sdk/",)),
    ("validation: pydantic, jsonschema", ("/pydantic", "/jsonschema")),
    ("event loop: asyncio, selectors, socket", ("/asyncio/", "selectors.py", "socket.py")),
]


def _layer(filename: str) -> str:
    for label, needles in LAYERS:
        if any(n in filename for n in needles):
            return label
    return "other"


def print_layers(stats: Any, tokens: int) -> None:
    """Self time by layer; a built-in's self time goes to the layer of each caller, in
    proportion to what that caller spent in it."""
    totals: dict[str, float] = {}
    for (filename, _, name), (_, _, tt, _, callers) in stats.stats.items():
        if "poll" in name and "epoll" in name:
            continue  # waiting for the network: idle, not CPU (cProfile's clock is wall time)
        if filename == "~" and callers:
            for (cfile, _, _), edge in callers.items():
                layer = _layer(cfile)
                totals[layer] = totals.get(layer, 0.0) + edge[2]
        else:
            layer = _layer(filename)
            totals[layer] = totals.get(layer, 0.0) + tt
    whole = sum(totals.values())
    print(f"\nunder cProfile: {whole / tokens * 1e6:.1f} µs/token (profiled)")
    print("| layer | share | µs/token (profiled) |")
    print("|---|---:|---:|")
    for label, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {t / whole:.1%} | {t / tokens * 1e6:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", default="1,32,256")
    parser.add_argument("--rate", type=float, default=2500.0)
    parser.add_argument("--hold", type=int, default=256)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--profile", type=int, metavar="C")
    parser.add_argument("--profile-contender", default="fieldstream", choices=NAMES + EXTRAS)
    parser.add_argument(
        "--contenders",
        default=",".join(NAMES + EXTRAS),
        help="comma-separated, from: " + ", ".join(NAMES + EXTRAS),
    )
    parser.add_argument("--memory-one", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.contenders = [n.strip() for n in args.contenders.split(",")]
    unknown = set(args.contenders) - set(NAMES + EXTRAS)
    if unknown:
        parser.error(f"unknown contenders: {sorted(unknown)}")
    if args.memory_one:
        print(json.dumps(asyncio.run(memory_one(args.url, args.memory_one, args.hold))))
        return
    with start() as server:
        if args.profile:
            profile(server.base_url, args.profile, args.rate, args.profile_contender)
            return
        print(
            f"{TOKENS} tokens per stream, one per event; rate {args.rate:g} tokens/s "
            f"(0 = unpaced); {args.rounds} rounds; openai {openai.__version__} "
            f"(over httpx2 {httpx2.__version__}), httpx {httpx.__version__}; "
            f"{os.cpu_count()} CPUs (shared)",
            flush=True,
        )
        cpu = asyncio.run(cpu_table(server.base_url, args))
        mem = None if args.no_memory else memory_table(server.base_url, args.hold, args.contenders)
    print_tables(cpu, mem, args.hold)


if __name__ == "__main__":
    main()
