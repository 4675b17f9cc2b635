"""Can llama.cpp's server continue a partial JSON answer under its grammar? (a script, not a test)

    .venv/bin/python tests/benchmarks/bench_prefill.py [--cuts 4] [--max-tokens 200]

What an HTTP backend would need to backtrack: send the answer up to the start of the offending
value and have the server go on from there, still under the schema's grammar. For each case of
``layout_cases.py``, llama.cpp's greedy answer is cut at up to ``--cuts`` value starts (strings
and numbers, spread over the answer), and the prefix is sent back three ways:

  * ``prefill``: the prefix as a trailing assistant message, ``response_format`` json_schema
    (llama.cpp continues a trailing assistant message by default);
  * ``continue``: the same with ``continue_final_message: true, add_generation_prompt: false``
    (the vLLM / transformers spelling);
  * ``raw``: ``/completion`` with the chat-templated prompt + prefix and ``json_schema``.

For each it reports how many continuations finished (``stop``), how many of those make, joined
to the prefix, a document that parses and matches the schema, and how many wrote the same value
again at the cut (greedy decoding, nothing ruled out: what a backtrack without a ban gets).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema

import partial

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from tests.benchmarks.layout_cases import CASES
from tests.integration.llama_server import LlamaServer, start


def post(llama: LlamaServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        llama.root + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer
    except urllib.error.HTTPError as exc:
        return {"error": f"HTTP {exc.code}: {exc.read().decode()[:200]}"}


def scalars(text: str) -> list[tuple[tuple[Any, ...], int, Any]]:
    """(path, offset, value) of every string and number in ``text``, in order."""
    starts: dict[tuple[Any, ...], int] = {}
    out = []
    for event in partial.Parser().feed(text):
        if isinstance(event, partial.ValueStart) and event.kind in (
            partial.Kind.STRING,
            partial.Kind.NUMBER,
        ):
            starts[event.path] = event.offset
        elif isinstance(event, partial.ValueDone) and event.path in starts:
            out.append((event.path, starts.pop(event.path), event.value))
    return out


def value_at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuts", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    llama = start(threads=args.threads)
    ways = ("prefill", "continue", "raw")
    counts = {way: {"cuts": 0, "errors": 0, "stop": 0, "valid": 0, "same": 0} for way in ways}
    try:
        for name, schema, prompt in CASES:
            messages = [{"role": "user", "content": prompt}]
            fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
            body = {"messages": messages, "temperature": 0, "max_tokens": args.max_tokens}
            answer = post(llama, "/v1/chat/completions", {**body, "response_format": fmt})
            text = answer["choices"][0]["message"]["content"]
            found = scalars(text)
            step = max(1, len(found) // args.cuts)
            template = post(llama, "/apply-template", {"messages": messages})["prompt"]
            for path, offset, original in found[::step][: args.cuts]:
                prefix = text[:offset]
                assistant = [*messages, {"role": "assistant", "content": prefix}]
                for way in ways:
                    if way == "raw":
                        raw = post(
                            llama,
                            "/completion",
                            {
                                "prompt": template + prefix,
                                "json_schema": schema,
                                "temperature": 0,
                                "n_predict": args.max_tokens,
                            },
                        )
                        out = raw.get("content", "")
                        stopped = raw.get("stop_type") in ("eos", "word") or raw.get("stopped_eos")
                        finish = "stop" if stopped else "length"
                        error = raw.get("error")
                    else:
                        extra = (
                            {"continue_final_message": True, "add_generation_prompt": False}
                            if way == "continue"
                            else {}
                        )
                        reply = post(
                            llama,
                            "/v1/chat/completions",
                            {**body, "messages": assistant, "response_format": fmt, **extra},
                        )
                        error = reply.get("error")
                        choice = (reply.get("choices") or [{}])[0]
                        out = (choice.get("message") or {}).get("content") or ""
                        finish = choice.get("finish_reason")
                    tally = counts[way]
                    tally["cuts"] += 1
                    if error:
                        tally["errors"] += 1
                        print(f"{name} {path} {way}: {error}")
                        continue
                    joined = out if out.startswith(prefix) else prefix + out
                    valid = False
                    value = None
                    try:
                        value = json.loads(joined)
                        jsonschema.validate(value, schema)
                        valid = True
                    except (ValueError, jsonschema.ValidationError):
                        pass
                    tally["stop"] += finish == "stop"
                    tally["valid"] += valid and finish == "stop"
                    tally["same"] += valid and value_at(value, path) == original
                    if args.show:
                        print(
                            f"{name} {path} {way} {finish} valid={valid}: {joined[offset:][:80]!r}"
                        )
        print(f"llama.cpp, greedy, max_tokens {args.max_tokens}, {len(CASES)} cases")
        print(f"{'way':<10}{'cuts':>6}{'errors':>8}{'finished':>10}{'valid':>7}{'same value':>12}")
        for way in ways:
            t = counts[way]
            print(
                f"{way:<10}{t['cuts']:>6}{t['errors']:>8}{t['stop']:>10}{t['valid']:>7}"
                f"{t['same']:>12}"
            )
    finally:
        llama.stop()


if __name__ == "__main__":
    main()
