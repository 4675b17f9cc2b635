"""Benchmark of the local engine's JSON layouts against llama.cpp's server (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_layout.py [--threads 1] [--max-tokens 256]
        [--layouts spaced,compact,indented,bounded,any] [--samples 0] [--no-server]

The same prompts and schemas (arrays the prompt wants filled, some bounded by ``maxItems``,
nested objects, enums, numbers) go to the local engine under each layout of its grammar
(``json_format``: see ``sdk/_local/_xgr_masks.py``) and to llama.cpp's OpenAI-compatible server
(xllamacpp, the same SmolLM2 GGUF, ``response_format`` json_schema, the model's own chat
template). Greedy decoding on both. For each output it counts:

  * valid: parses and matches the schema (a ``length`` finish is not valid);
  * arrays: non-empty arrays / arrays written;
  * fields: members whose value is not empty (``""``, ``[]``, ``{}``, ``null``) / members;
  * same: leaves (path and value) equal to llama.cpp's greedy output / llama.cpp's leaves;
  * tokens generated, seconds, and for the local engine whether jump-forward on and off wrote
    the same text (``--no-identity`` skips the second run).

``--samples K`` adds K seeded samples per case (temperature 0.8, top-p 0.95) on both sides and
counts non-empty arrays and valid outputs (seeds are not comparable between the two engines,
the totals are). Runs are sequential and interleaved case by case; one torch thread and one
llama.cpp thread (the machine may be shared: trust counts over seconds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import torch

import partial
from sdk._backend import GenerationRequest
from sdk._local._decode import DecodeStats
from sdk._local._engine import Engine
from sdk._local._model import load_model
from sdk._local._xgr_masks import JSON_FORMATS

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from tests.benchmarks.layout_cases import CASES
from tests.integration.llama_server import LlamaServer, start


@dataclass
class Output:
    text: str
    tokens: int
    seconds: float
    finish: str
    forced: int = 0
    identical: bool | None = None
    value: Any = None
    valid: bool = False
    arrays: tuple[int, int] = (0, 0)
    fields: tuple[int, int] = (0, 0)
    leaves: dict[tuple[Any, ...], Any] = field(default_factory=dict)


def measure(out: Output, schema: dict[str, Any]) -> Output:
    """Fill the counts of ``out`` from its text (a truncated output counts what it holds)."""
    try:
        out.value = json.loads(out.text)
        jsonschema.validate(out.value, schema)
        out.valid = out.finish == "stop"
    except (ValueError, jsonschema.ValidationError):
        parser = partial.Parser()
        try:
            parser.feed(out.text)
        except partial.JSONError:
            pass
        out.value = parser.snapshot()
    arrays = [0, 0]
    fields = [0, 0]

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if isinstance(value, list):
            arrays[0] += bool(value)
            arrays[1] += 1
            for i, item in enumerate(value):
                walk(item, (*path, i))
            if not value:
                out.leaves[path] = []
        elif isinstance(value, dict):
            for key, item in value.items():
                fields[0] += item not in ("", [], {}, None)
                fields[1] += 1
                walk(item, (*path, key))
            if not value:
                out.leaves[path] = {}
        else:
            out.leaves[path] = value

    walk(out.value, ())
    out.arrays = (arrays[0], arrays[1])
    out.fields = (fields[0], fields[1])
    return out


def local(
    engine: Engine,
    schema: dict[str, Any],
    prompt: str,
    max_tokens: int,
    *,
    jump_forward: bool = True,
    temperature: float | None = None,
    seed: int | None = None,
) -> Output:
    request = GenerationRequest(
        messages=({"role": "user", "content": prompt},),
        schema=schema,
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=0.95 if temperature else None,
        seed=seed,
    )
    stats = DecodeStats()
    started = time.perf_counter()
    texts: list[str] = []
    finish = ""
    generation = engine.start(
        request, jump_forward=jump_forward, default_max_tokens=max_tokens, stats=stats
    )
    for batch in generation:
        texts.extend(p.text for p in batch.pieces)
        finish = batch.finish_reason or finish
    seconds = time.perf_counter() - started
    return measure(
        Output("".join(texts), stats.completion_tokens, seconds, finish, stats.forced_tokens),
        schema,
    )


def server(
    llama: LlamaServer,
    schema: dict[str, Any],
    prompt: str,
    max_tokens: int,
    *,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Output:
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema, "strict": True},
        },
    }
    if temperature:
        body["top_p"] = 0.95
    if seed is not None:
        body["seed"] = seed
    request = urllib.request.Request(
        f"{llama.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())
    seconds = time.perf_counter() - started
    choice = answer["choices"][0]
    return measure(
        Output(
            choice["message"]["content"] or "",
            answer["usage"]["completion_tokens"],
            seconds,
            choice["finish_reason"],
        ),
        schema,
    )


def same(out: Output, reference: Output | None) -> tuple[int, int]:
    if reference is None:
        return (0, 0)
    hits = sum(1 for p, v in reference.leaves.items() if p in out.leaves and out.leaves[p] == v)
    return (hits, len(reference.leaves))


def ratio(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--layouts", default=",".join(JSON_FORMATS))
    parser.add_argument("--cases", default=",".join(name for name, _, _ in CASES))
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--no-server", action="store_true")
    parser.add_argument("--no-identity", action="store_true")
    parser.add_argument("--show", action="store_true", help="print every output's text")
    args = parser.parse_args()
    layouts = [name for name in args.layouts.split(",") if name]
    wanted = set(args.cases.split(","))
    cases = [case for case in CASES if case[0] in wanted]
    torch.set_num_threads(args.threads)
    loaded = load_model(None, "cpu")
    engines = {name: Engine(loaded, json_format=name) for name in layouts}  # type: ignore[arg-type]
    llama = None if args.no_server else start(threads=args.threads)
    print(
        f"SmolLM2-135M, greedy, max_tokens {args.max_tokens}, torch threads "
        f"{torch.get_num_threads()}, llama.cpp threads {args.threads}\n"
    )
    names = (["llama.cpp"] if llama else []) + layouts
    totals: dict[str, list[Output]] = {name: [] for name in names}
    agree: dict[str, list[tuple[int, int]]] = {name: [] for name in layouts}
    sampled: dict[str, list[Output]] = {name: [] for name in names}
    try:
        engines[layouts[0]].start(
            GenerationRequest(
                messages=({"role": "user", "content": "Hi"},), schema={}, mode="none"
            ),
            jump_forward=False,
            default_max_tokens=2,
            stats=DecodeStats(),
        ).close()
        head = f"{'case':<11}{'engine':<11}{'valid':>6}{'arrays':>8}{'fields':>8}{'same':>7}"
        print(f"{head}{'tokens':>8}{'forced':>8}{'s':>7}{'jf==off':>9}")
        for name, schema, prompt in cases:
            reference = server(llama, schema, prompt, args.max_tokens) if llama else None
            rows: list[tuple[str, Output]] = [("llama.cpp", reference)] if reference else []
            for layout in layouts:
                out = local(engines[layout], schema, prompt, args.max_tokens)
                if not args.no_identity:
                    off = local(
                        engines[layout], schema, prompt, args.max_tokens, jump_forward=False
                    )
                    out.identical = off.text == out.text
                agree[layout].append(same(out, reference))
                rows.append((layout, out))
            for engine_name, out in rows:
                totals[engine_name].append(out)
                hit = same(out, reference) if engine_name != "llama.cpp" else None
                print(
                    f"{name:<11}{engine_name:<11}{'yes' if out.valid else 'no':>6}"
                    f"{ratio(out.arrays):>8}{ratio(out.fields):>8}"
                    f"{ratio(hit) if hit else '':>7}{out.tokens:>8}"
                    f"{out.forced if engine_name != 'llama.cpp' else '':>8}{out.seconds:>7.1f}"
                    f"{'' if out.identical is None else str(out.identical):>9}"
                )
                if args.show:
                    print(f"    {out.text!r}")
            for seed in range(1, args.samples + 1):
                if llama:
                    sampled["llama.cpp"].append(
                        server(llama, schema, prompt, args.max_tokens, temperature=0.8, seed=seed)
                    )
                for layout in layouts:
                    sampled[layout].append(
                        local(
                            engines[layout],
                            schema,
                            prompt,
                            args.max_tokens,
                            temperature=0.8,
                            seed=seed,
                        )
                    )
        print(f"\nTotals over {len(cases)} cases (greedy):")
        print(
            f"{'engine':<11}{'valid':>7}{'non-empty arrays':>18}{'filled fields':>15}"
            f"{'same as llama.cpp':>19}{'tokens (median)':>17}{'seconds':>9}{'jf==off':>9}"
        )
        for engine_name in names:
            outs = totals[engine_name]
            arrays = (sum(o.arrays[0] for o in outs), sum(o.arrays[1] for o in outs))
            fields = (sum(o.fields[0] for o in outs), sum(o.fields[1] for o in outs))
            hits = agree.get(engine_name)
            same_total = (
                ratio((sum(h[0] for h in hits), sum(h[1] for h in hits))) if hits and llama else ""
            )
            tokens = [o.tokens for o in outs]
            identical = [o.identical for o in outs if o.identical is not None]
            print(
                f"{engine_name:<11}{sum(o.valid for o in outs):>4}/{len(outs):<2}"
                f"{ratio(arrays):>18}{ratio(fields):>15}{same_total:>19}"
                f"{sum(tokens):>8} ({statistics.median(tokens):>5.0f})"
                f"{sum(o.seconds for o in outs):>9.1f}"
                f"{f'{sum(identical)}/{len(identical)}' if identical else '':>9}"
            )
        if args.samples:
            print(f"\nSampled (temperature 0.8, top-p 0.95, {args.samples} seeds per case):")
            print(f"{'engine':<11}{'valid':>9}{'non-empty arrays':>18}{'tokens':>8}")
            for engine_name in names:
                outs = sampled[engine_name]
                arrays = (sum(o.arrays[0] for o in outs), sum(o.arrays[1] for o in outs))
                print(
                    f"{engine_name:<11}{sum(o.valid for o in outs):>5}/{len(outs):<3}"
                    f"{ratio(arrays):>18}{sum(o.tokens for o in outs):>8}"
                )
    finally:
        if llama:
            llama.stop()


if __name__ == "__main__":
    main()
