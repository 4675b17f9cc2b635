"""Where a contender's client CPU goes, by layer: ``bench_client.py --profile C`` (see there)."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from tests.benchmarks.client_contenders import DOCUMENTS, Contenders, command, wave


def profile(base_url: str, args: argparse.Namespace) -> None:
    """Profile one contender (``--profile-contender``) at concurrency ``--profile`` and print
    its self time by layer, with cProfile (deterministic: every call is timed, which inflates
    code made of many small calls) or pyinstrument (sampling; ``pip install pyinstrument``)."""
    concurrency = args.profile

    async def main() -> None:
        contenders = Contenders(base_url, DOCUMENTS[args.doc])
        cmd = command(concurrency, args.rate, args.doc)
        run = contenders.run[args.profile_contender]
        await wave(run, cmd, concurrency)
        waves = max(1, 96 // concurrency)
        tokens = waves * concurrency * contenders.tokens
        if args.profile_with == "pyinstrument":
            from pyinstrument import Profiler

            sampler = Profiler(interval=0.0002, async_mode="disabled")
            sampler.start()
            for _ in range(waves):
                await wave(run, cmd, concurrency)
            session = sampler.stop()
            print_layers(*_pyinstrument_layers(session.root_frame()), tokens, "pyinstrument")
        else:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(waves):
                await wave(run, cmd, concurrency)
            profiler.disable()
            stats = pstats.Stats(profiler)
            print_layers(*_cprofile_layers(stats), tokens, "cProfile")
            if os.environ.get("BENCH_TOP"):
                stats.sort_stats("tottime").print_stats(int(os.environ["BENCH_TOP"]))
        await contenders.aclose()

    asyncio.run(main())


LAYERS = [
    ("transport: h11", ("/h11/",)),
    ("transport: httpcore", ("/httpcore/",)),
    ("transport: httpx", ("/httpx/",)),
    ("transport: httpcore2", ("/httpcore2/",)),
    ("transport: httpx2", ("/httpx2/",)),
    ("openai-python", ("site-packages/openai/",)),  # not sdk/_http/openai/
    ("SSE: sdk/_http/_framing.py", ("sdk/_http/_framing.py",)),
    ("transport: anyio streams", ("/anyio/",)),
    ("SSE parsing: httpx-sse", ("/httpx_sse/",)),
    ("SSE: sdk/_http/_transport.py", ("sdk/_http/_transport.py",)),
    (
        "chunk decoding: sdk/_http/openai/_chat_decoder.py (+ json)",
        ("sdk/_http/openai/_chat_decoder.py", "/json/"),
    ),
    ("backend generator: sdk/_http/openai/_backend.py", ("sdk/_http/openai/_backend.py",)),
    ("Stream machinery: sdk/_stream/_stream.py", ("sdk/_stream/_stream.py",)),
    ("dispatch: sdk/_stream/_dispatch.py", ("sdk/_stream/_dispatch.py",)),
    ("tracker: sdk/_trackers/_field.py, sdk/_schema", ("sdk/_trackers/_field.py", "sdk/_schema/")),
    ("runaway checks: sdk/_trackers/_runaway.py", ("sdk/_trackers/_runaway.py",)),
    (
        "attempt and source: sdk/_stream/_attempt.py, _source.py, _pieces.py",
        ("sdk/_stream/_attempt.py", "sdk/_stream/_source.py", "sdk/_stream/_pieces.py"),
    ),
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


POOL = "_assign_requests_to_connections"  # httpcore's (and httpcore2's) pool bookkeeping


def _cprofile_layers(stats: Any) -> tuple[dict[str, float], float]:
    """Self time by layer (a built-in's self time goes to the layer of each caller, in
    proportion to what that caller spent in it), and the pool bookkeeping's total time."""
    totals: dict[str, float] = {}
    pool = 0.0
    for (filename, _, name), (_, _, tt, ct, callers) in stats.stats.items():
        if name == POOL:
            pool += ct
        if "poll" in name and "epoll" in name:
            continue  # waiting for the network: idle, not CPU (cProfile's clock is wall time)
        if filename == "~" and callers:
            for (cfile, _, _), edge in callers.items():
                layer = _layer(cfile)
                totals[layer] = totals.get(layer, 0.0) + edge[2]
        else:
            layer = _layer(filename)
            totals[layer] = totals.get(layer, 0.0) + tt
    return totals, pool


def _pyinstrument_layers(root: Any) -> tuple[dict[str, float], float]:
    """Self time by layer from pyinstrument's frame tree (a C function's time goes to the layer
    of the code that called it), and the pool bookkeeping's total time."""
    totals: dict[str, float] = {}
    pool = 0.0
    stack = [(root, False, "other")]
    while stack:
        frame, in_pool, parent_layer = stack.pop()
        if frame.function == POOL and not in_pool:
            pool += frame.time
            in_pool = True
        path = frame.file_path or ""
        # A C function, or code made by exec (dataclass __init__): its caller's layer.
        layer = parent_layer if path in ("<built-in>", "<string>", "") else _layer(path)
        stack.extend((child, in_pool, layer) for child in frame.children)
        if frame.is_synthetic or frame.function in ("epoll.poll", "select.select"):
            continue  # not code (pyinstrument's own frames), or waiting for the network
        totals[layer] = totals.get(layer, 0.0) + frame.total_self_time
    return totals, pool


def print_layers(totals: dict[str, float], pool: float, tokens: int, how: str) -> None:
    whole = sum(totals.values())
    print(f"\nunder {how}: {whole / tokens * 1e6:.1f} µs/token (profiled, not idle)")
    print("| layer | share | µs/token (profiled) |")
    print("|---|---:|---:|")
    for label, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {t / whole:.1%} | {t / tokens * 1e6:.2f} |")
    print(
        f"| of all this, the connection pool's bookkeeping ({POOL} and what it calls) "
        f"| {pool / whole:.1%} | {pool / tokens * 1e6:.2f} |"
    )
