"""What a token's mask costs on the llama.cpp runtime's llguidance masks (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_llg_mask.py [--runs 5]

Over the packaged model's vocabulary (SmolLM2, 49,152 tokens; its tokenizer read out of the
GGUF), feeds each document below token by token to an ``LlgConstraint`` and, at every token,
times ``mask()`` on a float32 numpy row of logits (1 x V) in place: llguidance filling its
bitmask, plus fieldstream's unpack of the bitmask and ``copyto`` of -inf (timed apart too, as
is ``llguidance.numpy.apply_token_bitmask_inplace`` for comparison). Prints per document the
median and p90 (and the maximum of ``mask()``) over its tokens of each, in microseconds, and
the tokens' count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import llguidance.hf  # noqa: E402
import llguidance.numpy  # noqa: E402
import numpy as np  # noqa: E402

from sdk import Tool  # noqa: E402
from sdk._local._constrain import GrammarSpec  # noqa: E402
from sdk._local._llg_masks import LlgGrammars  # noqa: E402
from sdk._local._model import default_gguf_path, gguf_tokenizer  # noqa: E402
from sdk._local._tools import tools_structural_tag  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "hobbies": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age", "hobbies", "email"],
}
PERSON_TEXT = json.dumps(
    {"name": "Mara Quist", "age": 34, "hobbies": ["chess", "rowing"], "email": "m@q.example"},
    indent=2,
)
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
TOOL_TEXT = (
    '<tool_call>[\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},\n'
    '{"name": "get_weather", "arguments": {"city": "Rome", "days": 1}}\n]</tool_call>'
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(grammars: LlgGrammars, spec: GrammarSpec, text: str, tokenizer: Any) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    constraint = grammars.constraint_for(spec, tokenizer)
    logits = np.zeros((1, grammars.vocab_size), dtype=np.float32)
    bitmask = llguidance.numpy.allocate_token_bitmask(1, grammars.ll_tokenizer.vocab_size)
    total, apply, theirs = [], [], []
    for token in ids:
        logits[:] = 0.0
        start = time.perf_counter()
        constraint.mask(logits)
        total.append(time.perf_counter() - start)
        assert np.isfinite(logits[0, token])  # the document's token is allowed
        # The unpack and fill alone (the bitmask is the one mask() just filled).
        start = time.perf_counter()
        bits = np.unpackbits(constraint._bitmask.view(np.uint8), bitorder="little")
        np.copyto(logits[0], -np.inf, where=~bits[: grammars.vocab_size].view(bool))
        apply.append(time.perf_counter() - start)
        bitmask[:] = constraint._bitmask
        start = time.perf_counter()
        llguidance.numpy.apply_token_bitmask_inplace(logits, bitmask)
        theirs.append(time.perf_counter() - start)
        constraint.accept(token)
    us = 1e6
    print(
        f"  {spec.kind:15} {len(ids):4} tokens  mask() median {statistics.median(total) * us:6.1f}"
        f" us, p90 {percentile(total, 0.9) * us:6.1f}, max {max(total) * us:6.1f} us;"
        f"  unpack+fill median {statistics.median(apply) * us:5.1f} us;"
        "  llguidance.numpy.apply median"
        f" {statistics.median(theirs) * us:5.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="passes over each document")
    args = parser.parse_args()
    tokenizer = gguf_tokenizer(default_gguf_path())
    ll = llguidance.hf.from_tokenizer(tokenizer)
    print(f"vocabulary: {ll.vocab_size} tokens; numpy {np.__version__}")
    tools = GrammarSpec(
        "structural_tag", json.dumps(tools_structural_tag([Tool("get_weather", WEATHER)]))
    )
    for run in range(args.runs):
        print(f"run {run + 1}")
        for layout in ("bounded", "compact"):
            grammars = LlgGrammars(ll, ll.vocab_size, [], json_format=layout)
            text = PERSON_TEXT
            if layout == "compact":
                text = json.dumps(json.loads(PERSON_TEXT), separators=(",", ":"))
            print(f" layout {layout}")
            measure(grammars, GrammarSpec("json_schema", json.dumps(PERSON)), text, tokenizer)
            if layout == "bounded":
                measure(grammars, tools, TOOL_TEXT, tokenizer)


if __name__ == "__main__":
    main()
