"""What jump-forward costs on a runtime, counted rather than timed (a script).

    .venv/bin/python tests/benchmarks/bench_jump_cost.py [--runtime llama.cpp] [--max-tokens 64]
        [--reps 15]

The machine is shared, so this reads no wall clock. Part 1: the CPU time of the calling thread
(``time.thread_time``: llama.cpp's one thread at ``threads=1``, or torch's with one intra-op
thread for ``--runtime torch``) of one pass of k tokens at the
same position, asking for the logits of the last row only or of all k rows (what a pass with
k - 1 draft tokens asks for), medians of ``--reps``. Part 2: each case of ``bench_local.py``
(user, book, team: its schemas and prompts, greedy, the engine's layout), decoded with jump-
forward off, on with a fresh draft memory ("cold", as ``bench_local.py --vs-llama`` runs it),
and on again with the memory the cold run left ("warm", as an engine serving the same schema
again), then the same two drafting from the memory only ("mem": no canonical split of a text
the model has not written yet; ``Constraint.canonical_tokens`` returns nothing for those runs):
forward passes, the tokens each fed, drafts proposed / confirmed / rejected, tokens run
through ``llama_decode`` after the prompt (rejected drafts included), logits rows, tokens cut
from the sequence, rewinds, and the CPU time of the decode calls. llama.cpp's KV cache is
emptied before each run, so each decodes its prompt alike (torch keeps none between requests).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sdk._local._drafts import DraftMemory
from sdk._local._engine import Engine
from sdk._local._llama_cpp import LlamaCppForward
from sdk._local._model import RUNTIMES, load_model
from sdk._local._xgr_masks import Constraint
from tests.benchmarks.bench_local import CASES, run_once

RUNS = (
    ("off", False),
    ("on, cold", True),
    ("on, warm", True),
    ("mem, cold", True),
    ("mem, warm", True),
)
"""Jump-forward off; on with a fresh draft memory, then with the memory that run left; the
same two with drafts from the memory only (no canonical split of a text not written yet)."""


@dataclass
class Pass:
    fed: int
    rows: int
    decoded: int
    cpu_s: float


@dataclass
class Log:
    passes: list[Pass] = field(default_factory=list)
    cut: int = 0


class CountingSequence:
    """A llama.cpp sequence that logs every pass and truncation."""

    def __init__(self, inner: Any, forward: Any, log: Log) -> None:
        self._inner, self._forward, self._log = inner, forward, log

    @property
    def length(self) -> int:
        return int(self._inner.length)

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        before = _decoded(self._forward)
        cpu = time.thread_time()
        rows = self._inner.decode(tokens, keep)
        cpu = time.thread_time() - cpu
        decoded = _decoded(self._forward) - before if before >= 0 else len(tokens)
        self._log.passes.append(Pass(len(tokens), keep, decoded, cpu))
        return rows

    def truncate(self, length: int) -> None:
        self._log.cut += self._inner.length - length
        self._inner.truncate(length)

    def close(self) -> None:
        self._inner.close()


def _decoded(forward: Any) -> int:
    """Tokens llama.cpp has decoded so far; -1 on torch, which decodes every token fed."""
    return forward.decoded_tokens if isinstance(forward, LlamaCppForward) else -1


def pass_cost(forward: Any, tokenizer: Any, reps: int) -> None:
    prompt = tokenizer.encode(
        "Describe a classic novel as a catalogue entry.", add_special_tokens=False
    )
    text = ' {"title": "The Night Circus", "publication_year": 1980, "genre": "fiction"}'
    filler = tokenizer.encode(text, add_special_tokens=False)
    sequence = forward.sequence()
    sequence.decode(prompt, 1)
    base = sequence.length
    print(f"{'tokens':>6} {'rows':>4} {'CPU ms/pass':>11} {'per token':>9} {'vs k x 1-token':>14}")
    single = 0.0
    for k in (1, 2, 3, 4, 6, 8, 12):
        for rows in sorted({1, k}):
            samples = []
            for _ in range(reps):
                # Make the cache differ at ``base``: the pass must decode all k tokens.
                sequence.truncate(base)
                sequence.decode([filler[-1]], 1)
                sequence.truncate(base)
                before = _decoded(forward)
                started = time.thread_time()
                sequence.decode(filler[:k], rows)
                samples.append(time.thread_time() - started)
                assert before < 0 or _decoded(forward) - before == k
            ms = statistics.median(samples) * 1e3
            single = ms if k == 1 else single
            print(f"{k:6} {rows:4} {ms:11.1f} {ms / k:9.1f} {ms / (k * single):13.2f}x")
    sequence.close()


def cases(engine: Engine, forward: Any, max_tokens: int) -> None:
    log = Log()
    opened = forward.sequence
    forward.sequence = lambda: CountingSequence(opened(), forward, log)
    try:
        for name, schema, prompt in CASES:
            memories = {"": DraftMemory(), "mem": DraftMemory()}
            texts = set()
            for label, jump in RUNS:
                log.passes.clear()
                log.cut = 0
                if isinstance(forward, LlamaCppForward):
                    forward.forget()
                memory = memories["mem" if label.startswith("mem") else ""]
                canonical = Constraint.canonical_tokens
                if label.startswith("mem"):  # no canonical split: drafts from the memory only
                    Constraint.canonical_tokens = lambda self, text: []  # type: ignore[method-assign]
                try:
                    run = run_once(
                        engine, schema, prompt, max_tokens, jump_forward=jump, memory=memory
                    )
                finally:
                    Constraint.canonical_tokens = canonical  # type: ignore[method-assign]
                texts.add(run.text)
                st = run.stats
                decode = log.passes[1:]  # the prompt's pass left out
                fed = Counter(p.fed for p in decode)
                print(
                    f"{name:5} {label:9} passes {len(decode):3}  drafts {st.drafted_tokens:3} "
                    f"confirmed {st.forced_tokens:3} rejected "
                    f"{st.drafted_tokens - st.forced_tokens:3}  decoded "
                    f"{sum(p.decoded for p in decode):3}  rows {sum(p.rows for p in decode):3}  "
                    f"cut {log.cut:3}  rewinds {st.rewinds}  CPU "
                    f"{sum(p.cpu_s for p in decode) * 1e3:5.0f} ms  tokens {st.completion_tokens}"
                )
                print(f"{'':16}tokens fed per pass: {dict(sorted(fed.items()))}")
            print(f"{'':16}same text in every run: {len(texts) == 1}")
    finally:
        forward.sequence = opened


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", default="llama.cpp", choices=RUNTIMES)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    loaded = load_model(None, "cpu", runtime=args.runtime, threads=1)
    forward = loaded.forward
    engine = Engine(loaded)
    run_once(engine, None, "Hi", 4, jump_forward=False)  # warm up
    print(f"Part 1 ({loaded.runtime}): one pass of k tokens, CPU time of one thread (medians)")
    pass_cost(forward, loaded.tokenizer, args.reps)
    print(f"\nPart 2 ({loaded.runtime}): the bench_local cases, {args.max_tokens} tokens, greedy")
    cases(engine, forward, args.max_tokens)


if __name__ == "__main__":
    main()
