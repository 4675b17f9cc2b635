"""Repair in place against regenerating: tokens and time to a valid result.

    .venv/bin/python tests/benchmarks/bench_backtrack.py [--attempts N] [--cases a,b] [--no-server]

Each case is a prompt whose greedy answer breaks a rule the grammar cannot enforce: list items
that repeat (``uniqueItems``), a code that must match a pattern checked by a pydantic validator,
a nested model whose validator refuses placeholder names. Three ways to reach a valid result,
each with up to ``--attempts`` attempts, greedy decoding:

- ``backtrack``: the local engine (SmolLM2-135M) with ``Retry(backtrack=True)``: the generation
  goes back to where the offending value began, rules out what it wrote there, and goes on;
- ``regenerate``: the local engine, each retry a fresh request with the violation fed back;
- ``server``: llama.cpp's server (xllamacpp, the same GGUF) regenerating the same way.

It prints, per case and method, whether a valid result came, the attempts, the tokens generated
(aborted attempts and rewound tokens included: the engine's and the stream's own counts) and
the wall time; then the medians and the ratios regenerate / backtrack. One process, the methods
interleaved per case; the machine is shared: trust tokens over seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
from pydantic import AfterValidator, BaseModel, Field, model_validator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from sdk import Client, Retry, StreamError  # noqa: E402
from sdk._local import LocalBackend  # noqa: E402

Tag = Annotated[str, Field(max_length=24)]


class Tags(BaseModel):
    tags: list[Tag] = Field(min_length=5, max_length=8, json_schema_extra={"uniqueItems": True})


def _code(value: str) -> str:
    import re

    if not re.fullmatch(r"[A-Z]{3}-[0-9]{3}", value):
        raise ValueError("a code is three capital letters, a dash and three digits (ABC-123)")
    return value


class Item(BaseModel):
    code: Annotated[str, Field(max_length=12), AfterValidator(_code)]
    name: Annotated[str, Field(max_length=30)]


class Order(BaseModel):
    item: Item
    quantity: int = Field(ge=1, le=9)


PLACEHOLDERS = {"john", "jane", "john doe", "jane doe", "alice", "bob"}


class Character(BaseModel):
    name: Annotated[str, Field(max_length=30)]
    age: int = Field(ge=1, le=120)

    @model_validator(mode="after")
    def not_a_placeholder(self) -> Character:
        if self.name.strip().lower() in PLACEHOLDERS:
            raise ValueError(f"{self.name!r} is a placeholder name: invent a real one")
        return self


class Story(BaseModel):
    hero: Character
    city: Annotated[str, Field(max_length=30)]


CASES: dict[str, tuple[str, Any]] = {
    "tags": ("List eight tags for a blog post about cooking pasta.", Tags),
    "fruit": ("List six colors of fruit.", Tags),
    "farm": ("List five animals that live on farms.", Tags),
    "code": ("Order two blue mugs; give the item a product code and a name.", Order),
    "hero": ("Give a sample JSON of a person for documentation.", Story),
    "red": ("List five fruits that are red.", Tags),
}


async def run_one(client: Client, prompt: str, schema: Any, retry: Retry) -> dict[str, Any]:
    started = time.monotonic()
    ok = False
    async with client.stream(
        messages=[{"role": "user", "content": prompt}],
        schema=schema,
        retry=retry,
        max_tokens=160,
        temperature=0,
    ) as s:
        try:
            await s.result()
            ok = True
        except StreamError:
            pass
    return {
        "ok": ok,
        "attempts": len(s.attempts),
        "tokens": s.usage.completion_tokens,
        "seconds": time.monotonic() - started,
    }


async def main(args: argparse.Namespace) -> None:
    names = args.cases.split(",") if args.cases else list(CASES)
    local = LocalBackend(threads=1)
    await anyio.to_thread.run_sync(local.load)
    server = None
    if not args.no_server:
        import tests.integration.llama_server as llama_server

        server = llama_server.start(threads=1)
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        async with Client.from_backend(local, max_retries=0) as engine:
            remote = Client(base_url=server.base_url, max_retries=0) if server else None
            for name in names:
                prompt, schema = CASES[name]
                rows[name] = {}
                methods = [
                    ("backtrack", engine, True),
                    ("regenerate", engine, False),
                ]
                if remote is not None:
                    methods.append(("server", remote, False))
                for method, client, backtrack in methods:
                    retry = Retry(max_attempts=args.attempts, backtrack=backtrack)
                    rows[name][method] = row = await run_one(client, prompt, schema, retry)
                    print(
                        f"{name:6} {method:10} valid={row['ok']!s:5} attempts={row['attempts']:2} "
                        f"tokens={row['tokens']:4} seconds={row['seconds']:6.1f}",
                        flush=True,
                    )
            if remote is not None:
                await remote.aclose()
    finally:
        if server is not None:
            server.stop()
    print()
    print("method       valid   median tokens   median seconds")
    for method in ("backtrack", "regenerate", "server"):
        got = [r[method] for r in rows.values() if method in r]
        if not got:
            continue
        valid = sum(r["ok"] for r in got)
        tokens = statistics.median(r["tokens"] for r in got)
        seconds = statistics.median(r["seconds"] for r in got)
        print(f"{method:12} {valid}/{len(got):<5} {tokens:13.0f}   {seconds:14.1f}")
    both = [r for r in rows.values() if r["backtrack"]["ok"] and r["regenerate"]["ok"]]
    if both:
        ratio = statistics.median(
            r["regenerate"]["tokens"] / r["backtrack"]["tokens"] for r in both
        )
        print(f"\nregenerate / backtrack tokens, cases both solved: median {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=8)
    parser.add_argument("--cases", help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--no-server", action="store_true")
    anyio.run(main, parser.parse_args())
