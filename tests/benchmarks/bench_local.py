"""Benchmark of the local engine (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_local.py [--threads 1] [--repeat 3] [--device cpu]
        [--json-format bounded]

Same prompts and schemas for every row; greedy decoding. Prints:
  * unconstrained and constrained decode speed (tokens/s, prompt excluded);
  * mask time per token (xgrammar fill + apply, special-token mask included) next to the
    forward time per token, and the mask's share of decode time;
  * schema compile time, cold and cached;
  * jump-forward (verified drafts, the engine's default) against no jump-forward: share of
    tokens forced, drafts confirmed, forward passes saved, wall-time speedup, and whether the
    text is identical. "canonical": every draft is the tokenizer's split; "cold": a fresh draft
    memory per run (drafts learn only from earlier in the same output); "warm": the memory of
    one earlier run of the same request (a repeated schema). And the classic unverified
    jump-forward (drafts trusted blindly, canonical split) for comparison.
Every configuration runs ``--repeat`` times; the fastest run counts (the machine is shared).
``--json-format`` picks the grammar's JSON layout (default: the engine's, ``bounded``).

    .venv/bin/python tests/benchmarks/bench_local.py --vs-llama [--threads 1] [--repeat 5]
        [--max-tokens 64]

instead races the local engine, on each runtime (``llama.cpp`` and ``torch``), against
llama.cpp's server (xllamacpp, the same SmolLM2-135M GGUF; ``tests/integration/llama_server.py``)
with the same thread count, the same prompts and schemas, greedy, one request at a time. Runs
are interleaved (each runtime without jump-forward and with it, then the server; then again)
and the medians are printed, with the engine's tokens/s as a fraction of the server's and the
tokens jump-forward forced. Decode speed excludes the prompt on both sides (the server's own
``timings.predicted_per_second``). Then the time to the first token of a retry (the same
conversation, the answer and a feedback message appended: what a retry with feedback sends)
against a cold request of that same conversation (KV cache emptied first), per runtime.

    .venv/bin/python tests/benchmarks/bench_local.py --concurrency 1,4,8 --vs-llama
        [--threads 1,2] [--repeat 3] [--max-tokens 64] [--overlap]

instead serves N streams at once, for each N given: N different requests (the cases in turn,
each prompt numbered) started together through ``LocalBackend.generate`` (as an app serving N
visitors does; ``slots`` = N) and, with ``--vs-llama``, through llama.cpp's server with
``n_parallel`` = N (streamed over HTTP, one client thread a stream), greedy, interleaved (the
engine without jump-forward, with it, then the server; then again), for each thread count.
Prints the medians of: aggregate tok/s (every stream's completion tokens over the wall time
from the first request sent to the last stream done), per-stream tok/s (a stream's tokens after
its first one over the time since it), time to first token (mean and worst of the streams),
and, for jump-forward, the forced tokens apart (its tok/s counts them, as a user sees them).
``--overlap`` instead races, interleaved, 8 masked streams (the cases) and the same prompts
unmasked ("free"), each with the round's masks filled before the pass and in a helper thread
during it ("ovl", ``Scheduler.overlap_masks``). ``--kv-unified`` instead races the slots' KV
caches apart (llama.cpp's default) against one unified cache (``LocalBackend(kv_unified=True)``)
and counts the streams whose text differs.

    .venv/bin/python tests/benchmarks/bench_local.py --piece-gap 1,63,64,128

instead decodes a 500-token prompt on llama.cpp whole, then cut in two calls (its last r tokens
apart, then its first r), and prints the largest difference of its last logits: what
``_llama_cpp.MIN_PIECE`` is about.

    .venv/bin/python tests/benchmarks/bench_local.py --round-split 8 [--repeat 3]
        [--max-tokens 24]

instead serves N streams on llama.cpp with one thread and with two, interleaved, and prints
the median time of a full round's ``llama_decode`` and the median time between two decodes
(the steps' Python: masks, sampling, the hops to the event loop, gathering).
``--runtime torch`` serves the streams on the torch runtime (the GGUF converted, float32 on the
CPU) and adds a row "turns": the same streams with batching off (``TorchForward.batched =
False``: one ``DynamicCache`` and one forward pass per stream, taking turns), what the batched
rows are measured against.

    .venv/bin/python tests/benchmarks/bench_local.py --batch-gap 4 [--max-tokens 20]

instead decodes N prompts (the cases in turn, numbered) greedily on the torch runtime, each
alone and then the N together in one batched pass a step, and prints for each the largest
logit difference between its batched rows and its rows alone, whether the greedy tokens are
the same, and the same against the unbatched ``DynamicCache`` path
(``TorchForward(batched=False)``).

    .venv/bin/python tests/benchmarks/bench_local.py --pass-cost 8 [--repeat 15]

instead times one-token forward passes on the torch runtime over 120 tokens of context: one
sequence on the shared store, one on a ``DynamicCache``, N sequences in one batched pass, and
the same N taking turns (one pass each), interleaved; medians, and each as a multiple of one
pass.

    .venv/bin/python tests/benchmarks/bench_local.py --thread-counts 1,2 [--repeat 4]
        [--max-tokens 32]

instead decodes the first case (constrained, no jump-forward) with each torch thread count in
turn, interleaved, and prints the median tokens/s of each and the load average: what the
default thread count (``sdk/_local/_threads.py``) is about.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch

from sdk._backend import GenerationRequest
from sdk._local._decode import DecodeStats, Generation, Piece
from sdk._local._drafts import DraftMemory
from sdk._local._engine import Engine
from sdk._local._llama_cpp import LlamaCppForward
from sdk._local._model import RUNTIMES, Runtime, load_model
from sdk._local._sampling import sampler_for
from sdk._local._xgr_masks import JSON_FORMATS

USER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 99999},
        "first_name": {"type": "string", "maxLength": 12},
        "last_name": {"type": "string", "maxLength": 12},
        "email": {"type": "string", "maxLength": 32},
        "is_active": {"type": "boolean"},
        "role": {"enum": ["admin", "editor", "viewer"]},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "maxLength": 20},
                "city": {"type": "string", "maxLength": 16},
                "postal_code": {"type": "string", "maxLength": 8},
                "country": {"type": "string", "maxLength": 16},
            },
            "required": ["street", "city", "postal_code", "country"],
            "additionalProperties": False,
        },
    },
    "required": ["id", "first_name", "last_name", "email", "is_active", "role", "address"],
    "additionalProperties": False,
}
BOOK = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 24},
        "publication_year": {"type": "integer", "minimum": 1000, "maximum": 2100},
        "genre": {"enum": ["fiction", "science", "history", "poetry"]},
        "author": {
            "type": "object",
            "properties": {
                "first_name": {"type": "string", "maxLength": 12},
                "last_name": {"type": "string", "maxLength": 12},
                "nationality": {"type": "string", "maxLength": 12},
            },
            "required": ["first_name", "last_name", "nationality"],
            "additionalProperties": False,
        },
        "is_available": {"type": "boolean"},
    },
    "required": ["title", "publication_year", "genre", "author", "is_available"],
    "additionalProperties": False,
}
TEAM = {
    "type": "object",
    "properties": {
        "members": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 12},
                    "role": {"enum": ["lead", "developer", "designer", "tester"]},
                    "years": {"type": "integer", "minimum": 0, "maximum": 40},
                },
                "required": ["name", "role", "years"],
                "additionalProperties": False,
            },
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["members"],
    "additionalProperties": False,
}
CASES = [
    ("user", USER, "Create a user record for a new employee of a bakery."),
    ("book", BOOK, "Describe a classic novel as a catalogue entry."),
    ("team", TEAM, "List the three members of a small software team."),
]


@dataclass
class Run:
    text: str
    wall: float
    stats: DecodeStats


def run_once(
    engine: Engine,
    schema: dict[str, Any] | None,
    prompt: str,
    max_tokens: int,
    *,
    jump_forward: bool,
    verify: bool = True,
    memory: DraftMemory | None = None,
) -> Run:
    request = GenerationRequest(
        messages=({"role": "user", "content": prompt},),
        schema=schema or {},
        mode="json_schema" if schema is not None else "none",
    )
    constraint = (
        engine.grammars.constraint(schema, engine.loaded.tokenizer) if schema is not None else None
    )
    stats = DecodeStats()
    started = time.perf_counter()
    pieces: list[Piece] = []
    for batch in Generation(
        engine.loaded.forward.sequence(),
        engine.prompt_ids(request),
        sampler=sampler_for(engine.loaded.runtime),
        decoded_vocab=engine.grammars.decoded_vocab,
        stop_ids=engine.stop_ids,
        max_tokens=max_tokens,
        constraint=constraint,
        jump_forward=jump_forward,
        stats=stats,
        verify_drafts=verify,
        draft_memory=memory,
    ):
        pieces.extend(batch.pieces)
    wall = time.perf_counter() - started
    return Run("".join(p.text for p in pieces), wall, stats)


def best(repeat: int, fn: Callable[[], Run]) -> Run:
    runs = [fn() for _ in range(repeat)]
    return min(runs, key=lambda r: r.wall)


def decode_rate(run: Run) -> float:
    """Tokens per second after the prompt (prefill excluded)."""
    return run.stats.completion_tokens / max(run.wall - run.stats.prefill_s, 1e-9)


def _confirmed(stats: DecodeStats) -> str:
    share = stats.forced_tokens / max(stats.drafted_tokens, 1)
    return f"{stats.forced_tokens}/{stats.drafted_tokens} ({share:.0%})"


def _remembered(stats: DecodeStats) -> str:
    return f"{stats.remembered_tokens}/{stats.drafted_tokens}"


class _Canonical(DraftMemory):
    """A draft memory that never remembers: every draft is the canonical split."""

    def remember(self, text: str, tokens: Sequence[int]) -> None:
        pass


def llama_rate(base_url: str, schema: dict[str, Any], prompt: str, max_tokens: int) -> float:
    """One greedy request to llama.cpp's server: its decode tokens/s (prompt excluded)."""
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "max_tokens": max_tokens,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "out", "schema": schema, "strict": True},
        },
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        reply = json.load(response)
    return float(reply["timings"]["predicted_per_second"])


def vs_llama(engines: dict[str, Engine], threads: int, repeat: int, max_tokens: int) -> None:
    """The engine on each runtime against llama.cpp's server, interleaved; medians, then the
    retry's time to first token (module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from tests.integration.llama_server import start

    rates: dict[tuple[str, str], list[float]] = {}
    forced: dict[tuple[str, str], int] = {}
    labels = [f"{rt}{' jump-fwd' if jump else ''}" for rt in engines for jump in (False, True)]
    with start(threads=threads) as server:
        for _ in range(repeat):
            for name, schema, prompt in CASES:
                for runtime, engine in engines.items():
                    for jump in (False, True):
                        label = f"{runtime}{' jump-fwd' if jump else ''}"
                        run = run_once(engine, schema, prompt, max_tokens, jump_forward=jump)
                        rates.setdefault((name, label), []).append(decode_rate(run))
                        forced[(name, label)] = run.stats.forced_tokens
                rate = llama_rate(server.base_url, schema, prompt, max_tokens)
                rates.setdefault((name, "server"), []).append(rate)
    print(f"threads {threads}, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'case':<8}{'engine':<20}{'median tok/s':>13}{'vs server':>11}{'forced':>8}   runs")
    for name, _, _ in CASES:
        ref = statistics.median(rates[(name, "server")])
        for label in [*labels, "server"]:
            values = rates[(name, label)]
            median = statistics.median(values)
            runs = " ".join(f"{v:.1f}" for v in values)
            extra = str(forced.get((name, label), "")) if label != "server" else ""
            print(f"{name:<8}{label:<20}{median:>13.1f}{median / ref:>10.2f}x{extra:>8}   {runs}")
    print()
    for runtime, engine in engines.items():
        retry_ttft(runtime, engine, repeat, max_tokens)


def first_token_s(engine: Engine, request: GenerationRequest, *, cold: bool) -> tuple[float, str]:
    """Seconds from start to the first batch of ``request`` (prompt pass included), and the
    text; ``cold`` empties llama.cpp's KV cache first (the torch runtime keeps none)."""
    if cold and isinstance(engine.loaded.forward, LlamaCppForward):
        engine.loaded.forward.forget()
    stats = DecodeStats()
    started = time.perf_counter()
    generation = engine.start(request, jump_forward=True, default_max_tokens=64, stats=stats)
    first = next(generation)
    elapsed = time.perf_counter() - started
    text = "".join(p.text for p in first.pieces) + "".join(
        p.text for batch in generation for p in batch.pieces
    )
    generation.close()
    return elapsed, text


def retry_ttft(runtime: str, engine: Engine, repeat: int, max_tokens: int) -> None:
    """A retry's time to first token against a cold request of the same conversation."""
    name, schema, prompt = CASES[0]
    first = GenerationRequest(
        messages=({"role": "user", "content": prompt},), schema=schema, max_tokens=max_tokens
    )
    retries: list[float] = []
    colds: list[float] = []
    for _ in range(repeat):
        _, answer = first_token_s(engine, first, cold=True)
        retry = GenerationRequest(
            messages=(
                *first.messages,
                {"role": "assistant", "content": answer},
                {"role": "user", "content": "That is not valid: give every field. Try again."},
            ),
            schema=schema,
            max_tokens=max_tokens,
        )
        retries.append(first_token_s(engine, retry, cold=False)[0])
        colds.append(first_token_s(engine, retry, cold=True)[0])
    tokens = len(engine.prompt_ids(retry))
    print(
        f"{runtime:<10} retry of {name} ({tokens} prompt tokens): first token "
        f"{statistics.median(retries) * 1000:.0f} ms after the first request, "
        f"{statistics.median(colds) * 1000:.0f} ms cold (medians of {repeat})"
    )


def thread_counts(engine: Engine, counts: list[int], repeat: int, max_tokens: int) -> None:
    """Decode speed per torch thread count, interleaved; medians (module docstring)."""
    name, schema, prompt = CASES[0]
    rates: dict[int, list[float]] = {n: [] for n in counts}
    texts: dict[int, str] = {}
    for _ in range(repeat):
        for n in counts:
            torch.set_num_threads(n)
            run = run_once(engine, schema, prompt, max_tokens, jump_forward=False)
            rates[n].append(decode_rate(run))
            texts[n] = run.text
    print(f"case {name}, load average {os.getloadavg()[0]:.1f} at the end")
    for n, values in rates.items():
        runs = " ".join(f"{v:.1f}" for v in values)
        print(f"threads {n}: median {statistics.median(values):.1f} tok/s   {runs}")
    print(f"same text with every thread count: {len(set(texts.values())) == 1}")


@dataclass
class Streams:
    """One run of N streams at once."""

    wall: float
    tokens: list[int]
    forced: list[int]
    first: list[float]
    """Each stream's time to first token, from the moment all were started."""
    ends: list[float]
    texts: list[str]

    @property
    def aggregate(self) -> float:
        return sum(self.tokens) / self.wall

    @property
    def per_stream(self) -> float:
        rates = [
            (n - 1) / max(end - first, 1e-9)
            for n, first, end in zip(self.tokens, self.first, self.ends, strict=True)
            if n > 1
        ]
        return statistics.mean(rates) if rates else 0.0


def stream_cases(n: int) -> list[tuple[dict[str, Any], str]]:
    """N different requests: the cases in turn, each prompt numbered."""
    return [
        (CASES[i % len(CASES)][1], f"{CASES[i % len(CASES)][2]} (Request {i + 1}.)")
        for i in range(n)
    ]


def local_streams(backend: Any, n: int, max_tokens: int, *, masked: bool = True) -> Streams:
    import anyio

    cases = [(schema if masked else None, prompt) for schema, prompt in stream_cases(n)]
    tokens, forced = [0] * n, [0] * n
    first, ends = [0.0] * n, [0.0] * n
    texts = [""] * n

    async def one(i: int, started: float) -> None:
        schema, prompt = cases[i]
        request = GenerationRequest(
            messages=({"role": "user", "content": prompt},), schema=schema, max_tokens=max_tokens
        )
        parts: list[str] = []
        async for delta in backend.generate(request):
            if delta.text and not parts:
                first[i] = time.perf_counter() - started
            parts.append(delta.text)
            if delta.usage is not None:
                tokens[i] = delta.usage.completion_tokens
                forced[i] = delta.usage.forced_tokens
        ends[i] = time.perf_counter() - started
        texts[i] = "".join(parts)

    async def run() -> float:
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i, started)
        return time.perf_counter() - started

    wall = anyio.run(run)
    return Streams(wall, tokens, forced, first, ends, texts)


def server_streams(base_url: str, n: int, max_tokens: int) -> Streams:
    from concurrent.futures import ThreadPoolExecutor

    cases = stream_cases(n)
    tokens, first, ends = [0] * n, [0.0] * n, [0.0] * n
    texts = [""] * n
    started = time.perf_counter()

    def one(i: int) -> None:
        schema, prompt = cases[i]
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": max_tokens,
            "stream": True,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "out", "schema": schema, "strict": True},
            },
        }
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        parts: list[str] = []
        with urllib.request.urlopen(request, timeout=600) as response:
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices", []):
                    text = (choice.get("delta") or {}).get("content") or ""
                    if text and not parts:
                        first[i] = time.perf_counter() - started
                    if text:
                        parts.append(text)
                timings = chunk.get("timings")
                if timings and "predicted_n" in timings:
                    tokens[i] = int(timings["predicted_n"])
        ends[i] = time.perf_counter() - started
        texts[i] = "".join(parts)

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(one, range(n)))
    return Streams(time.perf_counter() - started, tokens, [0] * n, first, ends, texts)


def concurrency(args: argparse.Namespace) -> None:
    """N streams at once on the engine and on llama.cpp's server (module docstring)."""
    from sdk._local import LocalBackend

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from tests.integration.llama_server import start

    counts = [int(n) for n in args.concurrency.split(",")]
    threads_list = [int(n) for n in str(args.threads_list).split(",")]
    print(
        f"runtime {args.runtime or 'llama.cpp'}, streams {counts}, threads {threads_list}, "
        f"max_tokens {args.max_tokens}, repeat "
        f"{args.repeat}, overlap {args.overlap}, load average {os.getloadavg()[0]:.1f} at the start"
    )
    print(
        f"{'thr':>3} {'N':>2} {'engine':<12}{'aggr tok/s':>11}{'vs srv':>8}{'stream tok/s':>13}"
        f"{'ttft mean':>10}{'ttft max':>9}{'forced':>8}   aggregate runs"
    )
    for threads in threads_list:
        for n in counts:
            on_torch = args.runtime == "torch"
            labels = ["local", "local jf"] + (["turns"] if on_torch else [])
            if args.overlap:  # masked and unmasked streams, masks during the pass or before
                labels = ["local", "local ovl", "free", "free ovl"]
            if args.kv_unified:  # the slots' KV caches apart, or one cache for all
                labels = ["local", "local uni"]
            labels += ["server"] if args.vs_llama else []
            runtime: Runtime = args.runtime or "llama.cpp"
            backends = {
                "local": LocalBackend(
                    threads=threads, slots=n, context=1024, jump_forward=False, runtime=runtime
                ),
                "local jf": LocalBackend(threads=threads, slots=n, context=1024, runtime=runtime),
            }
            for label in ("turns", "local ovl", "free", "free ovl"):
                backends[label] = backends["local"]
            if args.kv_unified:
                backends["local uni"] = LocalBackend(
                    threads=threads, slots=n, context=1024, jump_forward=False, kv_unified=True
                )
            for backend in backends.values():
                engine = backend.load()
                if on_torch:
                    torch.set_num_threads(threads)
                    engine.scheduler.slots = n  # the torch model is loaded once: its slots
                else:
                    engine.loaded.forward.threads = threads  # type: ignore[attr-defined]
            local_streams(backends["local"], n, 4)  # warm up
            runs: dict[str, list[Streams]] = {label: [] for label in labels}
            server = start(threads=threads, parallel=n) if args.vs_llama else None
            try:
                if server is not None:
                    server_streams(server.base_url, n, 4)  # warm up
                for _ in range(args.repeat):
                    for label in labels:
                        if label == "server":
                            assert server is not None
                            runs[label].append(server_streams(server.base_url, n, args.max_tokens))
                        elif label == "turns":  # the torch runtime without batching
                            forward = backends[label].load().loaded.forward
                            forward.batched = False  # type: ignore[attr-defined]
                            try:
                                runs[label].append(
                                    local_streams(backends[label], n, args.max_tokens)
                                )
                            finally:
                                forward.batched = True  # type: ignore[attr-defined]
                        else:
                            scheduler = backends[label].load().scheduler
                            scheduler.overlap_masks = label.endswith("ovl")
                            runs[label].append(
                                local_streams(
                                    backends[label],
                                    n,
                                    args.max_tokens,
                                    masked=not label.startswith("free"),
                                )
                            )
            finally:
                if server is not None:
                    server.stop()
            ref = statistics.median(r.aggregate for r in runs["server"]) if server else 0.0
            for label in labels:
                rs = runs[label]
                aggregate = statistics.median(r.aggregate for r in rs)
                ratio = f"{aggregate / ref:.2f}x" if ref else "-"
                stream = statistics.median(r.per_stream for r in rs)
                ttft = statistics.median(statistics.mean(r.first) for r in rs)
                worst = statistics.median(max(r.first) for r in rs)
                forced = statistics.median(sum(r.forced) for r in rs)
                total = statistics.median(sum(r.tokens) for r in rs)
                extra = f"{forced:.0f}/{total:.0f}" if label == "local jf" else ""
                each = " ".join(f"{r.aggregate:.1f}" for r in rs)
                print(
                    f"{threads:>3} {n:>2} {label:<12}{aggregate:>11.1f}{ratio:>8}{stream:>13.1f}"
                    f"{ttft * 1000:>8.0f}ms{worst * 1000:>7.0f}ms{extra:>8}   {each}"
                )
            if "local uni" in runs:
                pairs = [
                    (a, b)
                    for r in runs["local uni"]
                    for a, b in zip(runs["local"][0].texts, r.texts, strict=True)
                ]
                print(
                    f"        streams whose text differs, unified against apart: "
                    f"{sum(a != b for a, b in pairs)} of {len(pairs)}"
                )
            for ref_label, kin in (
                ("local", ("local", "local jf", "turns", "local ovl")),
                ("free", ("free", "free ovl")),
            ):
                if ref_label in runs:
                    local = [r for label in kin for r in runs.get(label, [])]
                    same = all(r.texts == runs[ref_label][0].texts for r in local)
                    print(f"        same texts on every run of {', '.join(kin)}: {same}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def round_split(args: argparse.Namespace) -> None:
    """N streams on llama.cpp, one thread then two, interleaved: the median time of a full
    round's ``llama_decode`` and of the time between two decodes (the steps' Python)."""
    from sdk._local import LocalBackend

    n = args.round_split
    backend = LocalBackend(threads=1, slots=n, context=1024, jump_forward=False)
    forward = backend.load().loaded.forward
    assert isinstance(forward, LlamaCppForward)
    calls: list[tuple[float, float, int]] = []

    class Timed:
        def __init__(self, lib: Any) -> None:
            self._lib = lib

        def __getattr__(self, name: str) -> Any:
            return getattr(self._lib, name)

        def llama_decode(self, ctx: Any, batch: Any) -> Any:
            started = time.perf_counter()
            status = self._lib.llama_decode(ctx, batch)
            calls.append((started, time.perf_counter(), int(batch.n_tokens)))
            return status

    forward._lib = Timed(forward._lib)
    local_streams(backend, n, 4)  # warm up
    seen: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
    print(f"{n} streams, {args.max_tokens} tokens each, load average {os.getloadavg()[0]:.1f}")
    for _ in range(args.repeat):
        for threads in seen:
            forward.threads = threads
            calls.clear()
            run = local_streams(backend, n, args.max_tokens)
            full = [c for c in calls if c[2] == n]
            decode = statistics.median(c[1] - c[0] for c in full)
            between = statistics.median(
                b[0] - a[1] for a, b in itertools.pairwise(calls) if a[2] == n and b[2] == n
            )
            seen[threads].append((run.aggregate, decode, between))
    for threads, runs in seen.items():
        print(
            f"threads {threads}: aggregate {statistics.median(r[0] for r in runs):.1f} tok/s, "
            f"a round's decode {statistics.median(r[1] for r in runs) * 1000:.1f} ms, between "
            f"decodes {statistics.median(r[2] for r in runs) * 1000:.2f} ms"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def piece_gap(args: argparse.Namespace) -> None:
    """A long prompt decoded whole, and cut in two pieces (its last r tokens in a call of their
    own, or its first r): the largest difference of its last logits, for each r."""
    import numpy as np

    from sdk._local import LocalBackend

    backend = LocalBackend(threads=int(args.threads_text or 1), runtime="llama.cpp", slots=1)
    engine = backend.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    request = GenerationRequest(
        messages=(
            {"role": "system", "content": "Summarize."},
            {"role": "user", "content": "Summarize this. " + "The quick brown fox jumps. " * 60},
        ),
        schema={"type": "string"},
    )
    ids = engine.prompt_ids(request)

    def last_logits(cuts: list[int]) -> Any:
        forward.forget()
        sequence, start, rows = forward.sequence(), 0, None
        for n in cuts:
            rows = sequence.decode(ids[start : start + n], 1).copy()
            start += n
        sequence.close()
        return rows

    whole = last_logits([len(ids)])
    print(f"prompt of {len(ids)} tokens, load average {os.getloadavg()[0]:.1f}")
    for r in (int(n) for n in args.piece_gap.split(",")):
        tail = float(np.abs(last_logits([len(ids) - r, r]) - whole).max())
        head = float(np.abs(last_logits([r, len(ids) - r]) - whole).max())
        print(f"r {r:>4}: last r apart {tail:.4f}, first r apart {head:.4f}")


def batch_gap(args: argparse.Namespace) -> None:
    """How far a torch row decoded in a batch is from the same sequence alone (greedy)."""
    from sdk._local._torch_forward import TorchForward

    torch.set_num_threads(int(args.threads_text or 1))
    loaded = load_model(args.model, args.device, dtype=args.dtype, runtime="torch")
    forward = loaded.forward
    assert isinstance(forward, TorchForward) and forward.batched
    engine = Engine(loaded)
    prompts = [
        engine.prompt_ids(
            GenerationRequest(messages=({"role": "user", "content": prompt},), schema={})
        )
        for _, prompt in stream_cases(args.batch_gap)
    ]
    steps = args.max_tokens
    old = TorchForward(loaded.model, loaded.device, batched=False)

    def alone(fwd: TorchForward, prompt: list[int]) -> tuple[list[int], list[Any]]:
        sequence = fwd.sequence()
        rows = sequence.decode(prompt, 1)
        tokens, logits = [], []
        for _ in range(steps):
            tokens.append(int(rows[-1].argmax()))
            logits.append(rows[-1].clone())
            rows = sequence.decode(tokens[-1:], 1)
        sequence.close()
        return tokens, logits

    alone_store = [alone(forward, p) for p in prompts]
    alone_dynamic = [alone(old, p) for p in prompts]
    sequences = [forward.sequence() for _ in prompts]
    rows = [s.decode(p, 1) for s, p in zip(sequences, prompts, strict=True)]
    tokens: list[list[int]] = [[] for _ in prompts]
    gaps = [0.0] * len(prompts)
    for step in range(steps):
        for k, sequence in enumerate(sequences):
            tokens[k].append(int(rows[k][-1].argmax()))
            gap = float((rows[k][-1] - alone_store[k][1][step]).abs().max())
            gaps[k] = max(gaps[k], gap)
            sequence.append(tokens[k][-1:])
        rows = forward.decode_many([(s, 1) for s in sequences])
    print(f"{len(prompts)} prompts, {steps} greedy steps, batch of {len(prompts)}")
    for k in range(len(prompts)):
        store, dynamic = alone_store[k], alone_dynamic[k]
        old_gap = max(float((a - b).abs().max()) for a, b in zip(store[1], dynamic[1], strict=True))
        print(
            f"prompt {k}: batch vs alone max |diff| {gaps[k]:.2e}, same tokens "
            f"{tokens[k] == store[0]}; store alone vs DynamicCache alone {old_gap:.2e}, "
            f"same tokens {store[0] == dynamic[0]}"
        )


def pass_cost(args: argparse.Namespace) -> None:
    """One-token passes on the torch runtime: one sequence, N batched, N taking turns."""
    from sdk._local._torch_forward import TorchForward

    torch.set_num_threads(int(args.threads_text or 1))
    n = args.pass_cost
    loaded = load_model(args.model, args.device, dtype=args.dtype, runtime="torch")
    batched = loaded.forward
    assert isinstance(batched, TorchForward) and batched.batched
    turns = TorchForward(loaded.model, loaded.device, batched=False)
    prompt = list(range(100, 220))  # 120 tokens of context

    def opened(forward: TorchForward, count: int) -> list[Any]:
        sequences = [forward.sequence() for _ in range(count)]
        for sequence in sequences:
            sequence.decode(prompt, 1)
        return sequences

    rows = {
        "1, store": (batched, opened(batched, 1)),
        "1, DynamicCache": (turns, opened(turns, 1)),
        f"{n} batched": (batched, opened(batched, n)),
        f"{n} turns": (turns, opened(turns, n)),
    }
    times: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(args.repeat):
        for label, (forward, sequences) in rows.items():
            for sequence in sequences:
                sequence.append([5])
            started = time.perf_counter()
            forward.decode_many([(sequence, 1) for sequence in sequences])
            times[label].append(time.perf_counter() - started)
    print(
        f"one-token passes over 120 tokens of context, medians of {args.repeat}, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    one = statistics.median(times["1, store"])
    for label, spent in times.items():
        median = statistics.median(spent)
        print(f"{label:<18}{median * 1000:>8.1f} ms{median / one:>8.2f}x one pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--threads", dest="threads_text", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--json-format", default=JSON_FORMATS[0], choices=JSON_FORMATS)
    parser.add_argument("--runtime", default=None, choices=RUNTIMES)
    parser.add_argument("--vs-llama", action="store_true", help="race llama.cpp's server")
    parser.add_argument("--thread-counts", help="compare torch thread counts, e.g. 1,2")
    parser.add_argument("--concurrency", help="streams at once, e.g. 1,4,8")
    parser.add_argument("--overlap", action="store_true", help="masks during the pass")
    parser.add_argument("--kv-unified", action="store_true", help="one KV cache for all slots")
    parser.add_argument("--piece-gap", help="llama.cpp: a prompt cut before its last r tokens")
    parser.add_argument("--round-split", type=int, help="llama.cpp: N streams, a round's parts")
    parser.add_argument(
        "--batch-gap", type=int, help="torch: N prompts batched vs alone, logits compared"
    )
    parser.add_argument("--pass-cost", type=int, help="torch: one-token passes, N batched")
    args = parser.parse_args()
    if args.pass_cost:
        pass_cost(args)
        return
    if args.piece_gap:
        piece_gap(args)
        return
    if args.round_split:
        round_split(args)
        return
    if args.batch_gap:
        batch_gap(args)
        return
    if args.concurrency:
        args.threads_list = args.threads_text or "1,2"
        concurrency(args)
        return
    args.threads = int(args.threads_text or 1)
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    if args.vs_llama:
        runtimes = [args.runtime] if args.runtime else list(RUNTIMES)
        engines = {}
        for runtime in runtimes:
            loaded = load_model(args.model, args.device, runtime=runtime, threads=args.threads)
            engines[runtime] = Engine(loaded, json_format=args.json_format)
            run_once(engines[runtime], None, "Hi", 4, jump_forward=False)  # warm up
        vs_llama(engines, args.threads, args.repeat, args.max_tokens)
        return
    loaded = load_model(
        args.model, args.device, dtype=args.dtype, runtime=args.runtime, threads=args.threads
    )
    load_s = time.perf_counter() - started
    engine = Engine(loaded, json_format=args.json_format)
    print(
        f"model {loaded.source} on {loaded.device} ({loaded.runtime}), layout "
        f"{args.json_format}, threads {args.threads}, "
        f"load {load_s:.1f}s, repeat {args.repeat} (fastest run counts)\n"
    )
    # Warm up (first forward passes allocate).
    run_once(engine, None, "Hi", 4, jump_forward=False)
    if args.thread_counts:
        counts = [int(n) for n in args.thread_counts.split(",")]
        thread_counts(engine, counts, args.repeat, args.max_tokens)
        return

    rows: list[tuple[str, ...]] = []
    print(f"{'case':<14}{'what':<34}{'value':>14}")
    for name, schema, prompt in CASES:
        plain = partial(run_once, engine, None, prompt + " Answer in JSON.", args.max_tokens)
        constrained = partial(run_once, engine, schema, prompt, args.max_tokens)
        unconstrained = best(args.repeat, partial(plain, jump_forward=False))
        off = best(args.repeat, partial(constrained, jump_forward=False))
        on = best(args.repeat, partial(constrained, jump_forward=True))
        canon = best(args.repeat, partial(constrained, jump_forward=True, memory=_Canonical()))
        warm_memory = DraftMemory()
        constrained(jump_forward=True, memory=warm_memory)  # the earlier request
        warm = best(args.repeat, partial(constrained, jump_forward=True, memory=warm_memory))
        naive = best(
            args.repeat,
            partial(constrained, jump_forward=True, verify=False, memory=_Canonical()),
        )
        st = off.stats
        decode_passes = st.forward_passes - 1
        fwd_per_tok = (st.forward_s - st.prefill_s) / max(decode_passes, 1)
        mask_per_tok = st.mask_s / max(st.completion_tokens, 1)
        decode_time = off.wall - st.prefill_s
        engine.grammars.clear_cache()
        t0 = time.perf_counter()
        engine.grammars.compile(schema)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        engine.grammars.compile(schema)
        cached = time.perf_counter() - t0
        saved = off.stats.forward_passes - on.stats.forward_passes
        warm_saved = off.stats.forward_passes - warm.stats.forward_passes
        rows += [
            (name, "unconstrained tok/s", f"{decode_rate(unconstrained):.1f}"),
            (name, "constrained tok/s (no jump-fwd)", f"{decode_rate(off):.1f}"),
            (name, "constrained tok/s (jump-fwd)", f"{decode_rate(on):.1f}"),
            (name, "forward ms/token", f"{fwd_per_tok * 1e3:.2f}"),
            (name, "mask ms/token (fill+apply)", f"{mask_per_tok * 1e3:.3f}"),
            (name, "mask share of decode time", f"{st.mask_s / decode_time:.2%}"),
            (name, "schema compile cold ms", f"{cold * 1e3:.2f}"),
            (name, "schema compile cached ms", f"{cached * 1e3:.3f}"),
            (name, "tokens generated", f"{on.stats.completion_tokens}"),
            (
                name,
                "jump-fwd: tokens forced",
                f"{on.stats.forced_tokens / max(on.stats.completion_tokens, 1):.1%}",
            ),
            (name, "jump-fwd canonical: confirmed", _confirmed(canon.stats)),
            (
                name,
                "jump-fwd canonical: fwd passes",
                f"{canon.stats.forward_passes} vs {off.stats.forward_passes}",
            ),
            (name, "jump-fwd canonical: speedup", f"{off.wall / canon.wall:.2f}x"),
            (name, "jump-fwd canonical: identical", str(canon.text == off.text)),
            (name, "jump-fwd cold: drafts confirmed", _confirmed(on.stats)),
            (name, "jump-fwd cold: from memory", _remembered(on.stats)),
            (
                name,
                "jump-fwd cold: forward passes",
                f"{on.stats.forward_passes} vs {off.stats.forward_passes} (-{saved})",
            ),
            (name, "jump-fwd cold: wall speedup", f"{off.wall / on.wall:.2f}x"),
            (name, "jump-fwd cold: identical text", str(on.text == off.text)),
            (name, "jump-fwd warm: drafts confirmed", _confirmed(warm.stats)),
            (name, "jump-fwd warm: from memory", _remembered(warm.stats)),
            (
                name,
                "jump-fwd warm: forward passes",
                f"{warm.stats.forward_passes} vs {off.stats.forward_passes} (-{warm_saved})",
            ),
            (name, "jump-fwd warm: wall speedup", f"{off.wall / warm.wall:.2f}x"),
            (name, "jump-fwd warm: identical text", str(warm.text == off.text)),
            (name, "unverified jump-fwd: speedup", f"{off.wall / naive.wall:.2f}x"),
            (name, "unverified jump-fwd: identical", str(naive.text == off.text)),
        ]
        for row in rows[-26:]:
            print(f"{row[0]:<14}{row[1]:<34}{row[2]:>14}")
        print(f"  text:       {off.text}")
        if naive.text != off.text:
            print(f"  unverified: {naive.text}")
        print()


if __name__ == "__main__":
    main()
