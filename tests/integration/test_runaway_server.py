"""Runaway output on a real server: llama.cpp (xllamacpp) on SmolLM2-135M, the server the suite
starts. ``logit_bias`` on the newline token under a grammar with free whitespace
(``ws ::= [ \\t\\n]*``, the caller's, sent in ``extra_body``) makes the real model write newlines
until its token limit; the client stops it at the bound (:class:`~sdk.RunawayWhitespace`), and
the retry carries the cure (``compact_whitespace``: on llama.cpp the caller's grammar gives
way to the schema, which llama.cpp's own converter bounds) and finishes valid, the bias still
on. Greedy decoding throughout.
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest
from pydantic import BaseModel, Field

from sdk import Client, Retry, RunawayWhitespace, TruncatedError
from tests.integration.llama_server import LlamaServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MAX_TOKENS = 400

FREE_WHITESPACE = r"""root ::= "{" ws "\"name\"" ws ":" ws name ws "," ws age-member ws "}"
age-member ::= "\"age\"" ws ":" ws age
name ::= "\"" [A-Za-z ]{1,20} "\""
age ::= [0-9]{1,3}
ws ::= [ \t\n]*
"""


class Person(BaseModel):
    name: str = Field(max_length=20)
    age: int


PROMPT = [{"role": "user", "content": "Ann is a 34 year old engineer. Give her as JSON."}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def newline_token(server: LlamaServer) -> int:
    request = urllib.request.Request(
        server.base_url.removesuffix("/v1") + "/tokenize",
        data=json.dumps({"content": "\n"}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        tokens: list[int] = json.load(response)["tokens"]
    assert len(tokens) == 1
    return tokens[0]


def biased(server: LlamaServer) -> dict[str, Any]:
    return {"grammar": FREE_WHITESPACE, "logit_bias": [[newline_token(server), 30.0]]}


async def test_newlines_without_end_abort_at_the_bound_and_the_cured_retry_finishes(
    llama_server: LlamaServer,
) -> None:
    async with Client(base_url=llama_server.base_url, server="llamacpp") as client:
        async with client.stream(
            messages=PROMPT,
            schema=Person,
            mode="none",
            max_tokens=MAX_TOKENS,
            temperature=0,
            extra_body=biased(llama_server),
            retry=Retry(max_attempts=2, jitter=0),
        ) as s:
            person = await s.result()
    first, second = s.attempts
    assert isinstance(first.error, RunawayWhitespace)
    # depth 1: 32 + 8 characters allowed; each newline is a token of its own
    assert first.error.length == 41 and first.text.count("\n") == 41
    assert first.usage.completion_tokens < 50  # of MAX_TOKENS
    assert second.error is None and isinstance(person, Person)  # valid (the tiny model's)
    # the bias is still on: the newlines came, each gap within llama.cpp's bound (22)
    gaps = re.findall(r"\s+", re.sub(r'"[^"]*"', '""', second.text))
    assert "\n" in second.text and max(map(len, gaps)) <= 22


async def test_without_the_check_the_same_request_runs_to_the_token_limit(
    llama_server: LlamaServer,
) -> None:
    async with Client(base_url=llama_server.base_url, server="llamacpp") as client:
        with pytest.raises(TruncatedError):
            async with client.stream(
                messages=PROMPT,
                schema=Person,
                mode="none",
                max_tokens=MAX_TOKENS,
                temperature=0,
                extra_body=biased(llama_server),
                runaway=None,
                retry=Retry(max_attempts=1, jitter=0),
            ) as s:
                await s.result()
    (only,) = s.attempts
    assert only.usage.completion_tokens == MAX_TOKENS and not only.usage.estimated
    # the model wrote a few members, then newlines to the limit
    assert only.text.count("\n") > MAX_TOKENS - 30
