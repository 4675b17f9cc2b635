"""The runaway checks' figures: false alarms on a corpus of real documents, tokens saved on real
runaways.

    .venv/bin/python tests/benchmarks/bench_runaway.py [--corpus] [--server] [--local]
        [--max-tokens 400] [--record PATH] [--prompt TEXT]... [--cost] [--rounds 31]

- ``--corpus`` (the default when nothing is named): every document of
  ``tests/benchmarks/runaway_corpus.py`` (real JSON from ``tests/data``, valid
  JSON-Schema-Test-Suite instances, recorded model outputs, each re-laid out three ways) fed in
  chunks of 4 characters to a tracker under the default ``RunawayLimits``, and under looser and
  tighter ones, and under the near check alone, loosened: how many raise a runaway (the
  false-alarm rate), and which.
- ``--server``: llama.cpp's server (``tests/integration/llama_server.py``, SmolLM2-135M),
  ``logit_bias`` on the newline token under a grammar with free whitespace (the case of
  ``tests/integration/test_runaway_server.py``): the completion tokens of the attempt the check
  stopped, against the same request without the check (it runs to ``--max-tokens``).
- ``--local``: the local engine (``Client.local()``, SmolLM2-135M, greedy, bounded layout) on
  recipe prompts where it loops: the tokens at the abort against ``--max-tokens`` without the
  check. ``--record PATH`` writes the outputs without the check (JSON: prompt -> text).
  ``--prompt TEXT`` (repeatable) replaces the recipe prompts.
- ``--cost``: what the checks cost a tracker, in one process, interleaved: bench_client's two
  documents (``tests/benchmarks/client_contenders.py``) fed token by token under the defaults,
  with the near check off (``near_repeats=None``) and with ``runaway=None``; for each of
  ``--rounds`` rounds each arm in turn (the order reversed every other round), five trackers
  each; the median µs per token and its ratio to the near check off.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

import anyio  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from sdk import Client, FieldTracker, RunawayLimits, RunawayOutput, StreamError  # noqa: E402
from tests.benchmarks.runaway_corpus import false_alarms  # noqa: E402

LIMITS = {
    "default": RunawayLimits(),
    "tighter (whitespace 16+4, repeats 4 over 64)": RunawayLimits(
        whitespace=16, whitespace_per_level=4, repeats=4, repeat_span=64
    ),
    "tight (whitespace 8+2, repeats 3 over 32)": RunawayLimits(
        whitespace=8, whitespace_per_level=2, repeats=3, repeat_span=32
    ),
    "near check alone, loose (4 near copies over 64)": RunawayLimits(
        whitespace=None, repeats=None, near_repeats=4, near_span=64
    ),
    "near check alone, loose and wide (4 near copies over 64, 16 characters apart)": RunawayLimits(
        whitespace=None, repeats=None, near_repeats=4, near_span=64, near_chars=16
    ),
}


def corpus() -> None:
    for name, limits in LIMITS.items():
        start = time.perf_counter()
        seen, alarms = false_alarms(limits, chunk=4)
        took = time.perf_counter() - start
        kinds = Counter(type(e).__name__ for _, e in alarms)
        rate = len(alarms) / seen
        print(
            f"{name}: {len(alarms)} false alarms of {seen} documents ({rate:.4%}) "
            f"{dict(kinds) or ''} [{took:.1f} s]"
        )
        for doc, error in alarms[:3]:
            print(f"    {doc}: {str(error)[:140]}")


class Person(BaseModel):
    name: str
    age: int


def server(max_tokens: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    from tests.integration import test_runaway_server as case
    from tests.integration.llama_server import start

    llama = start()
    try:

        async def one(runaway: RunawayLimits | None) -> tuple[int, str]:
            async with Client(base_url=llama.base_url, server="llamacpp") as client:
                try:
                    async with client.stream(
                        messages=case.PROMPT,
                        schema=Person,
                        mode="none",
                        max_tokens=max_tokens,
                        temperature=0,
                        extra_body=case.biased(llama),
                        runaway=runaway,
                    ) as s:
                        await s.result()
                except StreamError:
                    pass
            attempt = s.attempts[0]
            return attempt.usage.completion_tokens, type(attempt.error).__name__

        checked = anyio.run(one, RunawayLimits())
        unchecked = anyio.run(one, None)
    finally:
        llama.stop()
    saved = unchecked[0] - checked[0]
    print(
        f"llama.cpp, newline bias, free-whitespace grammar, max_tokens {max_tokens}: "
        f"stopped at {checked[0]} tokens ({checked[1]}); without the check {unchecked[0]} "
        f"({unchecked[1]}): {saved} tokens saved ({saved / unchecked[0]:.0%})"
    )


class Recipe(BaseModel):
    title: str
    ingredients: list[str]
    steps: list[str]


RECIPES = [
    "Write a recipe for bacon pasta.",
    "Write a recipe for a bacon omelette, with ten steps.",
    "List the steps to make a bacon sandwich.",
    "Write a long recipe for bacon and eggs.",
]


def local(max_tokens: int, record: Path | None) -> None:
    async def run() -> dict[str, str]:
        recorded: dict[str, str] = {}
        total_checked = total_unchecked = 0
        async with Client.local() as client:
            for prompt in RECIPES:
                row = []
                for runaway in (RunawayLimits(), None):
                    try:
                        async with client.stream(
                            messages=[{"role": "user", "content": prompt}],
                            schema=Recipe,
                            max_tokens=max_tokens,
                            temperature=0,
                            runaway=runaway,
                        ) as s:
                            await s.result()
                    except StreamError:
                        pass
                    attempt = s.attempts[0]
                    row.append((attempt.usage.completion_tokens, attempt.error))
                    if runaway is None:
                        recorded[prompt] = attempt.text
                (checked, error), (unchecked, _) = row
                if isinstance(error, RunawayOutput):
                    total_checked += checked
                    total_unchecked += unchecked
                what = f"{type(error).__name__}: {str(error)[:90]}" if error else "valid"
                print(f"  {prompt!r}: {checked} tokens ({what}); without the check {unchecked}")
        print(
            f"local engine, the runaway cases: {total_checked} tokens against {total_unchecked} "
            f"without the check ({total_unchecked - total_checked} saved)"
        )
        return recorded

    recorded = anyio.run(run)
    if record is not None:
        record.write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n")


def cost(rounds: int) -> None:
    import statistics

    from tests.benchmarks.client_contenders import DOCUMENTS

    arms: dict[str, RunawayLimits | None] = {
        "defaults": RunawayLimits(),
        "near check off": RunawayLimits(near_repeats=None),
        "runaway=None": None,
    }
    for name, doc in DOCUMENTS.items():
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        for r in range(rounds):
            order = list(arms.items())
            for arm, limits in order if r % 2 else order[::-1]:
                start = time.perf_counter()
                for _ in range(5):
                    tracker = FieldTracker(doc.model, runaway=limits)
                    for token in doc.tokens:
                        tracker.feed(token)
                    tracker.finish()
                    tracker.close()
                took = time.perf_counter() - start
                times[arm].append(took / 5 / len(doc.tokens) * 1e6)
        medians = {arm: statistics.median(values) for arm, values in times.items()}
        base = medians["near check off"]
        print(
            f"{name} ({len(doc.tokens)} tokens): "
            + "; ".join(f"{a} {m:.2f} µs/token ({m / base:.3f}x)" for a, m in medians.items())
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="store_true")
    parser.add_argument("--server", action="store_true")
    parser.add_argument("--local", action="store_true")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--record", type=Path)
    parser.add_argument("--prompt", action="append")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    if args.prompt:
        RECIPES[:] = args.prompt
    if args.corpus or not (args.server or args.local or args.cost):
        corpus()
    if args.cost:
        cost(args.rounds)
    if args.server:
        server(args.max_tokens)
    if args.local:
        local(args.max_tokens, args.record)


if __name__ == "__main__":
    main()
