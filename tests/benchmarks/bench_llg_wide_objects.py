"""What objects of many optional properties cost on the llama.cpp runtime's llguidance masks
(a script, not a test): why ``_llg_masks.MAX_ITEMS_IN_ROW`` is what it is.

    .venv/bin/python tests/benchmarks/bench_llg_wide_objects.py [--formats bounded,compact]
        [--max-items-in-row 20000] [--step-max-items 200000] [N ...]

For each N (default 700 1000 3000 5000) and JSON layout, an object schema of N optional integer
properties is compiled by an ``LlgGrammars`` over the packaged model's tokenizer (read out of the
GGUF) with the given limits, and a document of its second and last property is fed
token by token, each token's mask filled first. Prints whether the document went through (else
the error), the compile time and the slowest token's mask, in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import llguidance.hf  # noqa: E402

from sdk._errors import BackendError  # noqa: E402
from sdk._local._constrain import GrammarSpec  # noqa: E402
from sdk._local._llg_masks import MAX_ITEMS_IN_ROW, STEP_MAX_ITEMS, LlgGrammars  # noqa: E402
from sdk._local._model import default_gguf_path, gguf_tokenizer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[700, 1000, 3000, 5000])
    parser.add_argument("--formats", default="bounded,compact")
    parser.add_argument("--max-items-in-row", type=int, default=MAX_ITEMS_IN_ROW)
    parser.add_argument("--step-max-items", type=int, default=STEP_MAX_ITEMS)
    args = parser.parse_args()
    tokenizer = gguf_tokenizer(default_gguf_path())
    ll_tokenizer = llguidance.hf.from_tokenizer(tokenizer)
    for json_format in args.formats.split(","):
        grammars = LlgGrammars(
            ll_tokenizer,
            ll_tokenizer.vocab_size,
            [],
            json_format=json_format,  # type: ignore[arg-type]
            max_items_in_row=args.max_items_in_row,
            step_max_items=args.step_max_items,
        )
        gap = " " if json_format == "bounded" else ""
        for n in args.sizes:
            properties = {f"field_{i}": {"type": "integer"} for i in range(n)}
            schema = {"type": "object", "properties": properties}
            document = f'{{"field_1":{gap}1,{gap}"field_{n - 1}":{gap}3}}'
            start = time.perf_counter()
            spec = GrammarSpec("json_schema", json.dumps(schema))
            constraint = grammars.constraint_for(spec, tokenizer)
            compiled = time.perf_counter() - start
            slowest, outcome = 0.0, "ok"
            try:
                for token in tokenizer.encode(document, add_special_tokens=False):
                    start = time.perf_counter()
                    constraint.allowed()  # the mask, as the decode loop fills it
                    slowest = max(slowest, time.perf_counter() - start)
                    # A token the mask refuses raises: BackendError when llguidance stopped.
                    constraint.accept(token)
            except (BackendError, RuntimeError) as exc:
                outcome = f"{type(exc).__name__}: {str(exc)[:110]}"
            print(
                f"{json_format:8} {n:6} properties: {outcome}; compile {compiled:.2f} s, "
                f"slowest mask {slowest:.3f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
