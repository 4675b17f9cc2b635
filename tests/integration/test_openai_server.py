"""Client against a real OpenAI-compatible server: llama.cpp (xllamacpp) on SmolLM2-135M.

The server constrains decoding with the schema's grammar; the client streams, checks, aborts
and retries. The model is tiny and loops on unbounded arrays, so every array has maxItems and
every request a small max_tokens. Greedy decoding (temperature 0) wherever the output matters.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import httpx
import openai
import pytest
from pydantic import BaseModel, Field

from sdk._backend import GenerationRequest
from sdk._client import Client
from sdk._errors import SchemaViolation, TruncatedError
from sdk._events import FieldEvent
from sdk._http.openai._backend import OpenAIBackend
from sdk._options import RequestOptions
from sdk._retry import Retry
from tests.integration.llama_server import LlamaServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # one event loop is enough against a real server: time is the budget


class Address(BaseModel):
    city: str = Field(max_length=40)
    country: str = Field(max_length=40)


class Person(BaseModel):
    name: str = Field(max_length=40)
    age: int = Field(ge=0, le=150)
    role: Literal["engineer", "doctor", "teacher"]
    address: Address
    hobbies: list[str] = Field(max_length=2)


async def test_structured_response(llama_server: LlamaServer) -> None:
    fired: list[tuple[Any, ...]] = []
    async with Client(base_url=llama_server.base_url, model="smollm2") as client:
        async with client.stream(
            messages=[
                {
                    "role": "user",
                    "content": "Ann is a 34 year old engineer from Oslo, Norway who likes chess.",
                }
            ],
            schema=Person,
            on_field={"/address/*": lambda ev: fired.append(ev.path)},
            max_tokens=120,
            temperature=0,
        ) as s:
            events = [ev async for ev in s if isinstance(ev, FieldEvent)]
            person = await s.result()
    assert isinstance(person, Person)
    assert person.role in ("engineer", "doctor", "teacher")
    assert len(person.hobbies) <= 2
    assert sorted(fired) == [("address", "city"), ("address", "country")]
    assert events[-1].path == ()
    assert s.usage.prompt_tokens > 0 and s.usage.completion_tokens > 0


async def test_small_max_tokens_is_a_truncation(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.base_url) as client:
        with pytest.raises(TruncatedError) as info:
            async with client.stream(
                messages=[{"role": "user", "content": "A person."}],
                schema=Person,
                max_tokens=6,
                temperature=0,
            ) as s:
                await s.result()
    assert info.value.reason == "length"
    assert info.value.open_paths
    assert s.usage.completion_tokens == 6


async def _idle(server: LlamaServer) -> None:
    """Wait until the server's slot is free (the cancelled task has been processed)."""
    await anyio.to_thread.run_sync(server.wait_idle)


async def _metrics(server: LlamaServer) -> dict[str, float]:
    return await anyio.to_thread.run_sync(server.metrics)


FRUITS = [{"role": "user", "content": "List one hundred fruits."}]
# The server is only told "an object with a list of strings"; the client wants at most 2.
LOOSE_LIST = {
    "type": "json_schema",
    "json_schema": {
        "name": "Fruits",
        "schema": {
            "type": "object",
            "properties": {"fruits": {"type": "array", "items": {"type": "string"}}},
            "required": ["fruits"],
        },
    },
}
STRICT_LIST = {
    "type": "object",
    "properties": {"fruits": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["fruits"],
}


async def test_an_abort_stops_the_servers_decoding(llama_server: LlamaServer) -> None:
    # Idle connections dropped before the server's 5 s keep-alive ends: a request never goes out
    # on a connection the server is closing (a loaded machine stretches the gaps between them).
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(keepalive_expiry=2.0)) as http:
        # The full generation, read to its end: the server's own count of tokens.
        await _idle(llama_server)
        before = await _metrics(llama_server)
        backend = OpenAIBackend(base_url=llama_server.base_url, http_client=http)
        request = GenerationRequest(
            messages=tuple(FRUITS),
            schema={},
            mode="none",
            max_tokens=200,
            temperature=0,
            extra={"response_format": LOOSE_LIST},
        )
        full_text = "".join([d.text async for d in backend.generate(request)])
        await _idle(llama_server)
        middle = await _metrics(llama_server)

        # The same request through the client: it aborts at the third element.
        async with Client(base_url=llama_server.base_url, http_client=http) as client:
            with pytest.raises(SchemaViolation) as info:
                async with client.stream(
                    messages=FRUITS,
                    schema=STRICT_LIST,
                    max_tokens=200,
                    temperature=0,
                    extra_body={"response_format": LOOSE_LIST},
                    show_schema=False,  # the conversation sent above, as it is
                ) as s:
                    await s.result()
        await _idle(llama_server)
        after = await _metrics(llama_server)

    assert info.value.keyword == "maxItems"
    full = middle["tokens_predicted_total"] - before["tokens_predicted_total"]
    aborted = after["tokens_predicted_total"] - middle["tokens_predicted_total"]
    decodes_full = middle["n_decode_total"] - before["n_decode_total"]
    decodes_aborted = after["n_decode_total"] - middle["n_decode_total"]
    assert s.attempts[0].text and full_text.startswith(s.attempts[0].text.rstrip())
    # The server stopped decoding soon after the client closed the connection.
    assert 0 < aborted < full / 2, (aborted, full)
    assert decodes_aborted < decodes_full / 2, (decodes_aborted, decodes_full)


COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "black", "white"]


def pick_schema(colors: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"color": {"enum": colors}},
        "required": ["color"],
        "additionalProperties": False,
    }


# The server's grammar allows every colour; the client's schema forbids the one that the first
# attempt (this seed) writes, so that attempt must break it, and the stream must abort it and
# retry. Sampling at temperature 1 with the next seed, a later attempt picks another colour.
SERVER = {"type": "json_schema", "json_schema": {"name": "Pick", "schema": pick_schema(COLORS)}}
PICK = [{"role": "user", "content": "Pick a colour. Reply in JSON."}]


async def test_a_retry_after_a_violation_succeeds(llama_server: LlamaServer) -> None:
    shown = False
    async with Client(base_url=llama_server.base_url) as client:
        for seed in (7, 8, 9):  # llama.cpp may not repeat a sample exactly: try a few seeds
            options: RequestOptions = {
                "max_tokens": 20,
                "temperature": 1.0,
                "seed": seed,
                "extra_body": {"response_format": SERVER},
                # One conversation for both schemas: shown the narrower one, the model would
                # not repeat the sample the client's schema forbids.
                "show_schema": False,
            }
            async with client.stream(messages=PICK, schema=pick_schema(COLORS), **options) as s:
                first = (await s.result())["color"]
            allowed = [c for c in COLORS if c != first]
            async with client.stream(
                messages=PICK, schema=pick_schema(allowed), retry=Retry(max_attempts=6), **options
            ) as s:
                result = await s.result()
            assert result["color"] in allowed  # the retry produced a valid document
            broken = [a for a in s.attempts if isinstance(a.error, SchemaViolation)]
            if not broken:
                continue  # the first attempt did not repeat its sample this time
            for attempt in broken:
                assert attempt.error is not None
                assert (attempt.error.pointer, attempt.error.keyword) == ("/color", "enum")
                # Aborted inside the colour: the closing brace was never read.
                assert "}" not in attempt.text, attempt.text
            assert s.attempts[-1].error is None
            shown = True
            break
    assert shown, "no seed reproduced its first sample: the retry path was never exercised"


async def test_from_openai_against_the_same_server(llama_server: LlamaServer) -> None:
    oai = openai.AsyncOpenAI(base_url=llama_server.base_url, api_key="unused")
    async with Client.from_openai(oai, model="smollm2") as client:
        async with client.stream(
            messages=[{"role": "user", "content": "Bob is a 50 year old doctor in Lyon, France."}],
            schema=Person,
            max_tokens=120,
            temperature=0,
        ) as s:
            person = await s.result()
    await oai.close()
    assert isinstance(person, Person)
    assert s.usage.completion_tokens > 0
