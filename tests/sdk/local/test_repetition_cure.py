"""The local engine's cure of a repetition, on the real model (docs/retries.md): SmolLM2-135M,
greedy, loops on a recipe ("bacon", "bacon", ... until the detector stops it); the retry asks
for ``less_repetition``, its sampler lowers what it picked recently, and the same prompt then
finishes with a valid document."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from sdk import Client, RepeatedOutput, Retry
from sdk._local import LocalBackend

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Recipe(BaseModel):
    title: str
    ingredients: list[str]
    steps: list[str]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the real model on one event loop: the loop is not what is tested


# The prompts of tests/benchmarks/bench_runaway.py on which SmolLM2 loops (greedy).
LOOPING = [
    "Write a recipe for bacon pasta.",
    "Write a recipe for a bacon omelette, with ten steps.",
    "List the steps to make a bacon sandwich.",
]


@pytest.mark.parametrize("content", LOOPING)
async def test_a_loop_aborts_and_the_cured_retry_finishes_valid(content: str) -> None:
    backend = LocalBackend(threads=1, runtime="llama.cpp")
    prompt = [{"role": "user", "content": content}]
    async with (
        Client.from_backend(backend) as client,
        client.stream(
            messages=prompt,
            schema=Recipe,
            max_tokens=600,
            temperature=0,
            retry=Retry(max_attempts=2, jitter=0, backoff=0),
        ) as s,
    ):
        recipe = await s.result()
    first, second = s.attempts
    assert isinstance(first.error, RepeatedOutput)
    assert second.error is None and isinstance(recipe, Recipe)
    assert second.usage is not None and second.usage.completion_tokens < 600
