"""Compile time of large real-world schemas (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_schema_compile.py [--runs 5] [--meta] [PATH...]

Compiles every schema of ``tests/data/schema-corpus/`` (SchemaStore's schemas as
check-jsonschema vendors them, Kubernetes kinds bundled from kubernetes-validate: see its
README), plus any JSON file named, ``--runs`` times each with the compile cache bypassed
(``CompiledSchema`` built afresh: the dialect's translation, the cheap checks, the nodes the
root reaches), and prints per schema its size, dialect, outcome (compiled, or the refusal's
keyword), the number of keywords ignored as annotations and its median time; then the median,
p99 and maximum over the schemas' medians, and the time of a cached compile (a second
``compile_schema`` of an equal dict). ``--meta`` also times jsonschema's meta-schema check of
each schema (what every compile ran before, and now runs only with ``unknown="refuse"``).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sdk import SchemaError, compile_schema  # noqa: E402
from sdk._schema._compile import CompiledSchema  # noqa: E402
from sdk._schema._validators import check_schema  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "schema-corpus"


def _time(fn: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--meta", action="store_true")
    parser.add_argument("paths", nargs="*", type=Path)
    args = parser.parse_args()
    logging.getLogger("fieldstream").setLevel(logging.ERROR)  # the ignored keywords: counted
    paths = sorted(CORPUS.glob("*/*.json")) + list(args.paths)
    medians: list[float] = []
    outcomes = {"compiled": 0, "refused": 0}
    print(f"{'schema':58} {'KB':>6} {'dialect':8} {'outcome':22} {'ign':>4} {'ms':>8}", end="")
    print(f" {'meta ms':>8}" if args.meta else "")
    for path in paths:
        schema = json.loads(path.read_text(encoding="utf-8"))
        try:
            compiled = CompiledSchema(schema, "s", None)
            outcome, dialect, ignored = "compiled", compiled.dialect, len(compiled.ignored)
            outcomes["compiled"] += 1
        except SchemaError as exc:
            outcome, dialect, ignored = f"refused: {exc.keyword}", "", 0
            outcomes["refused"] += 1

        def once(schema: Any = schema) -> None:
            try:
                CompiledSchema(schema, "s", None)
            except SchemaError:
                pass

        ms = _time(once, args.runs)
        medians.append(ms)
        name = f"{path.parent.name}/{path.name}"
        size = path.stat().st_size / 1024
        print(
            f"{name[:58]:58} {size:6.0f} {dialect:8} {outcome[:22]:22} {ignored:4} {ms:8.1f}",
            end="",
        )
        if args.meta:
            try:
                check_schema(schema, dialect or "2020-12")
            except SchemaError:
                pass
            meta = _time(lambda s=schema, d=dialect: _meta(s, d), 1)
            print(f" {meta:8.1f}")
        else:
            print()
    medians.sort()
    p99 = medians[min(len(medians) - 1, round(0.99 * (len(medians) - 1)))]
    print(
        f"\n{len(paths)} schemas ({outcomes['compiled']} compiled, {outcomes['refused']} "
        f"refused), {args.runs} runs each: median {statistics.median(medians):.1f} ms, "
        f"p99 {p99:.1f} ms, max {medians[-1]:.1f} ms"
    )
    big = max(paths, key=lambda p: p.stat().st_size)
    schema = json.loads(big.read_text(encoding="utf-8"))
    try:
        compile_schema(schema)
        cached = _time(lambda: compile_schema(schema), args.runs)
        print(f"cached compile of the largest ({big.name}): {cached:.2f} ms (the key's JSON text)")
    except SchemaError:
        pass


def _meta(schema: Any, dialect: str) -> None:
    try:
        check_schema(schema, dialect or "2020-12")
    except SchemaError:
        pass


if __name__ == "__main__":
    main()
