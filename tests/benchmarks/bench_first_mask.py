"""Time to the first mask of each real-world schema, per runtime (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_first_mask.py [--runtime llama.cpp|torch|both]
        [--layout bounded] [--budget S] [PATH...]

For every schema of ``tests/data/schema-corpus/`` (SchemaStore's and Kubernetes', see
``tests/data/README.md``; a schema the tracker refuses is skipped and counted) plus any JSON
file named, in the canonical form ``Client.stream()`` hands the engine, cold (every cache of
the plan and the compile cleared first): the request's check (``check_llg`` / ``check``: the
mask's plan), the compile (``constraint_for``: llguidance's matcher, xgrammar's compiled
grammar) and the first mask over the packaged model's vocabulary (SmolLM2-135M, 49,152
tokens: ``mask()`` of a row of logits, as the engine masks), summed: the time to the first
usable mask, which is the widened schema's where the plan or the compile ran past the budget
(``mask_compile_budget``, ``--budget``; ``DEFAULT_MASK_COMPILE_BUDGET`` by default, 0 for
none). Prints each schema's milliseconds, whether its check returned before the plan was ready
and whether its first mask was the widened one, then median, p99 and max per runtime. A
compile left running past its budget is waited for (untimed) before the next schema, so each is
measured alone.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sdk import SchemaError, compile_schema  # noqa: E402
from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET  # noqa: E402
from sdk._local._constrain import GrammarSpec, check  # noqa: E402
from sdk._local._llg_specs import _lexer_stop, check_llg, plan_key, schema_plan  # noqa: E402
from sdk._local._mask_budget import CompileBudget, build_budget, forget_plans, plan_ready  # noqa: E402
from sdk._local._model import default_gguf_path, gguf_tokenizer  # noqa: E402
from sdk._local._xgr_schema import xgr_plan  # noqa: E402
from tests.sdk.local._local_support import request_for  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "schema-corpus"


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _grammars(runtime: str, tokenizer: Any, layout: Any, budget: float | None) -> Any:
    stop = [tokenizer.eos_token_id]
    if runtime == "llama.cpp":
        import llguidance.hf

        from sdk._local._llg_masks import LlgGrammars

        ll = llguidance.hf.from_tokenizer(tokenizer)
        vocab = [ll.decode_bytes([i]) for i in range(ll.vocab_size)]
        return LlgGrammars(
            ll, ll.vocab_size, vocab, json_format=layout, stop_token_ids=stop, budget=budget
        )
    from sdk._local._xgr_masks import Grammars

    return Grammars(
        tokenizer, len(tokenizer), json_format=layout, stop_token_ids=stop, budget=budget
    )


def _first_mask(
    runtime: str, grammars: Any, text: str, tokenizer: Any, layout: Any, budget: float | None
) -> tuple[float, float, bool]:
    """(the request's check, the compile and first mask), milliseconds, cold; and whether the
    check returned before the plan was ready (past the budget)."""
    grammars.clear_cache()
    schema_plan.cache_clear()
    _lexer_stop.cache_clear()
    xgr_plan.cache_clear()
    forget_plans()
    request = request_for("x", json.loads(text))
    start = time.perf_counter()
    if runtime == "llama.cpp":
        check_llg(request, layout, budget=budget)
    else:
        check(request, budget)
    checked = time.perf_counter()
    if runtime == "llama.cpp":  # untimed: did the check return before its plan was ready?
        pending = not plan_ready(plan_key(text, layout))
    else:
        pending = not plan_ready(("xgr", text, build_budget(budget)))
    compiling = time.perf_counter()
    constraint = grammars.constraint_for(GrammarSpec("json_schema", text), tokenizer)
    constraint.mask(_logits(runtime, grammars.vocab_size))  # as the engine masks its logits
    done = time.perf_counter()
    return (checked - start) * 1000, (done - compiling) * 1000, pending


def _logits(runtime: str, width: int) -> Any:
    """A row of logits as the runtime's engine masks it: numpy on llama.cpp, torch on torch."""
    if runtime == "llama.cpp":
        import numpy

        return numpy.zeros((1, width), dtype=numpy.float32)
    import torch

    return torch.zeros((1, width), dtype=torch.float32)


def _settle() -> None:
    """Wait (untimed) for the compiles that ran past their budget and go on in the background,
    so each schema is measured on an idle machine, not beside the last one's late compile."""
    for thread in threading.enumerate():
        if thread.name == "fieldstream-mask-compile":
            thread.join()


def _stats(what: str, values: list[float]) -> str:
    return (
        f"{what} median {statistics.median(values):.1f} ms, p99 {_p99(values):.1f} ms, "
        f"max {max(values):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtime", choices=["llama.cpp", "torch", "both"], default="both")
    parser.add_argument("--layout", default="bounded")
    parser.add_argument("--budget", type=float, default=DEFAULT_MASK_COMPILE_BUDGET)
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args()
    logging.getLogger("fieldstream").setLevel(logging.ERROR)
    budget = args.budget or None
    tokenizer = gguf_tokenizer(default_gguf_path())
    texts: list[tuple[str, str]] = []
    skipped = 0
    for path in [*sorted(CORPUS.glob("*/*.json")), *args.paths]:
        try:
            schema = compile_schema(json.loads(path.read_text(encoding="utf-8"))).schema_dict()
        except SchemaError:
            skipped += 1
            continue
        texts.append((path.name, json.dumps(schema, separators=(",", ":"))))
    runtimes = ["llama.cpp", "torch"] if args.runtime == "both" else [args.runtime]
    print(f"{len(texts)} schemas ({skipped} the tracker refuses, skipped); budget {budget} s")
    for runtime in runtimes:
        grammars = _grammars(runtime, tokenizer, args.layout, budget)
        _settle()  # the fallback masks compiled ahead (torch), as at the model's load
        checks: list[float] = []
        compiles: list[float] = []
        fell_back = 0
        late_plans = 0
        print(f"  {'runtime':9} {'schema':60} {'check':>9} {'compile+mask':>13} {'total':>9}")
        for name, text in texts:
            check_ms, compile_ms, pending = _first_mask(
                runtime, grammars, text, tokenizer, args.layout, budget
            )
            over = CompileBudget.taken(grammars)
            _settle()  # a compile left running past its budget ends before the next schema
            fell_back += over
            late_plans += pending
            checks.append(check_ms)
            compiles.append(compile_ms)
            print(
                f"  {runtime:9} {name:60} {check_ms:9.1f} {compile_ms:13.1f} "
                f"{check_ms + compile_ms:9.1f}"
                + ("  (plan past the budget at the check)" if pending else "")
                + ("  (compile past the budget: widened)" if over else "")
            )
        totals = [a + b for a, b in zip(checks, compiles, strict=True)]
        print(
            f"{runtime} over {len(texts)} schemas: {late_plans} checks returned before their "
            f"plan was ready, {fell_back} first masks widened (the compile past the budget):"
        )
        print(f"  {_stats('first mask', totals)}")
        print(f"  {_stats('check', checks)}; {_stats('compile + first mask', compiles)}")


if __name__ == "__main__":
    main()
