"""The llama.cpp runtime runs with torch, transformers and xgrammar impossible to import.

A subprocess blocks the three imports (``sys.modules[name] = None``: an ``import`` of them
raises ImportError) and runs real generations on the default model through ``Client``: a schema
whose field check makes the first value fail, repaired by a backtracking rewind in the same
generation, and a tools request, both with jump-forward on. It prints what it measured as JSON;
this test checks it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = r"""
import sys
for name in ("torch", "transformers", "xgrammar"):
    sys.modules[name] = None

import json
from typing import Annotated

import anyio
from pydantic import AfterValidator, BaseModel, Field

from sdk import Client, Retry, SchemaViolation, Tool
from sdk._local import LocalBackend


REFUSED = []


def refuse_the_first(name):
    # The one mistake this test needs, forced: the first name the model writes is refused,
    # whatever it is, so no model or llama.cpp update can take the mistake away.
    if not REFUSED:
        REFUSED.append(name)
        raise ValueError("the first name is refused")
    return name


class Tags(BaseModel):
    name: Annotated[str, Field(max_length=24), AfterValidator(refuse_the_first)]
    tags: list[Annotated[str, Field(max_length=24)]] = Field(min_length=5, max_length=8)


class Weather(BaseModel):
    city: str


class Search(BaseModel):
    query: str


async def main() -> None:
    backend = LocalBackend(threads=1, jump_forward=True)
    out = {}
    async with Client.from_backend(backend, max_retries=0) as client:
        async with client.stream(
            messages=[{"role": "user", "content": "List five fruits that are red."}],
            schema=Tags,
            retry=Retry(max_attempts=6, backtrack=True),
            max_tokens=160,
            temperature=0,
        ) as s:
            result = await s.result()
        first = s.attempts[0].error
        stats = backend.last_stats
        out["runtime"] = backend.load().loaded.runtime
        out["tags"] = result.tags
        out["name"] = result.name
        out["first_error"] = str(first) if isinstance(first, SchemaViolation) else repr(first)
        out["first_path"] = list(first.path) if isinstance(first, SchemaViolation) else None
        out["refused"] = REFUSED
        out["attempts"] = len(s.attempts)
        out["rewinds"] = stats.rewinds
        out["forced"] = stats.forced_tokens
        async with client.stream(
            messages=[
                {
                    "role": "user",
                    "content": "Get the weather in Paris. Also search the web for 'croissant "
                    "recipes'.",
                }
            ],
            tools=[
                Tool("get_weather", Weather, "Get the current weather in a city"),
                Tool("search", Search, "Search the web"),
            ],
            max_tokens=80,
        ) as stream:
            results = await stream.results()
        out["calls"] = [[type(r).__name__, r.model_dump()] for r in results]
        out["tool_forced"] = backend.last_stats.forced_tokens
    out["loaded"] = sorted(
        name
        for name, module in sys.modules.items()
        if module is not None and name.split(".")[0] in {"torch", "transformers", "xgrammar"}
    )
    print(json.dumps(out))


anyio.run(main)
"""


def test_a_generation_runs_with_torch_transformers_and_xgrammar_blocked() -> None:
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["runtime"] == "llama.cpp"
    assert out["loaded"] == []  # nothing of torch, transformers or xgrammar got in
    # The schema: the field check refused the first name, a rewind repaired it in the same
    # generation.
    assert "the first name is refused" in out["first_error"], out["first_error"]
    assert out["first_path"] == ["name"] and len(out["refused"]) == 1
    assert out["name"] != out["refused"][0]  # the rewind banned the refused start
    assert out["rewinds"] >= 1
    tags = out["tags"]
    assert 5 <= len(tags) <= 8
    assert out["forced"] > 0  # jump-forward confirmed drafted tokens
    # The tools: two typed calls, each under its own tool's schema.
    assert [name for name, _ in out["calls"]] == ["Weather", "Search"]
    assert out["calls"][0][1]["city"] == "Paris"
    assert out["tool_forced"] > 0
