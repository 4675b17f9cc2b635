"""Tool loops: the reply ready to append (``assistant_message()`` in Chat shape, ``output_items()``
for the Responses API), each call's root event carrying its validated arguments, and a loop of
several turns whose every request is what OpenAI's request types accept; the tool-loop example
run against a scripted server."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from pydantic import BaseModel

from sdk import Client, FieldEvent, StreamUsageError, Tool
from tests.sdk.http.openai._openai_types import openai_errors

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
SSE = {"content-type": "text/event-stream"}
ROOT = Path(__file__).resolve().parents[2]


class Weather(BaseModel):
    city: str


class Convert(BaseModel):
    celsius: float


TOOLS = [Tool("get_weather", Weather), Tool("convert", Convert)]


def tool_stream(*calls: tuple[str, str, dict[str, Any]]) -> str:
    """A Chat Completions stream that calls ``(id, name, arguments)`` in order."""
    chunks = []
    for index, (call_id, name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        chunks.append({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [first]}}]})
        for piece in (text[:5], text[5:]):
            entry = {"index": index, "function": {"arguments": piece}}
            chunks.append({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]})
    chunks.append(
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    )
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def text_stream(text: str) -> str:
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def scripted(*replies: str) -> tuple[httpx.AsyncClient, list[dict[str, Any]]]:
    bodies: list[dict[str, Any]] = []
    queue = list(replies)

    def reply(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, headers=SSE, text=queue.pop(0))

    return httpx.AsyncClient(transport=httpx.MockTransport(reply)), bodies


async def test_each_calls_root_event_carries_its_validated_arguments() -> None:
    http, _ = scripted(
        tool_stream(
            ("call_a", "get_weather", {"city": "Oslo"}), ("call_b", "convert", {"celsius": 3})
        )
    )
    async with Client(base_url=BASE, model="m", http_client=http) as client:
        async with client.stream(messages=[{"role": "user", "content": "x"}], tools=TOOLS) as s:
            roots = [ev async for ev in s if isinstance(ev, FieldEvent) and not ev.path]
            values = await s.results()
    assert [(ev.tool_call_id, ev.instance) for ev in roots] == [
        ("call_a", Weather(city="Oslo")),
        ("call_b", Convert(celsius=3.0)),
    ]
    assert values == [ev.instance for ev in roots]


async def test_a_chat_tool_loop_of_several_turns() -> None:
    http, bodies = scripted(
        tool_stream(("call_1", "get_weather", {"city": "Paris"})),
        tool_stream(
            ("call_2", "convert", {"celsius": 21}), ("call_3", "get_weather", {"city": "Oslo"})
        ),
        text_stream("Paris 69.8 F; Oslo checked."),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Paris in F, and Oslo?"}]
    async with Client(base_url=BASE, model="gpt-4o", http_client=http, server="openai") as client:
        for _ in range(3):
            async with client.stream(messages=messages, tools=TOOLS, tool_choice="auto") as s:
                values = await s.results()
            messages.append(s.assistant_message())
            if not s.called_tools:
                break
            for call, value in zip(messages[-1]["tool_calls"], values, strict=True):
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": value.model_dump_json()}
                )
    assert values == ["Paris 69.8 F; Oslo checked."]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert [m.get("tool_call_id") for m in messages if m["role"] == "tool"] == [
        "call_1",
        "call_2",
        "call_3",
    ]
    assert messages[-1] == {"role": "assistant", "content": "Paris 69.8 F; Oslo checked."}
    assert len(bodies) == 3
    for body in bodies:  # every turn's request is one OpenAI accepts
        assert openai_errors(body, CompletionCreateParamsStreaming) == []
    assert bodies[2]["messages"] == messages[:-1]


async def test_a_responses_tool_loop_appends_output_items() -> None:
    def call_events(call_id: str, name: str, arguments: str) -> str:
        events = [
            {"type": "response.created", "response": {"id": "resp_1"}},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": call_id,
                    "name": name,
                    "arguments": "",
                },
            },
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "output_index": 0,
                "delta": arguments,
            },
            {
                "type": "response.completed",
                "response": {"id": "resp_1", "usage": {"input_tokens": 9, "output_tokens": 5}},
            },
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

    done = [
        {"type": "response.output_text.delta", "item_id": "m", "delta": "It is clear."},
        {
            "type": "response.completed",
            "response": {"usage": {"input_tokens": 20, "output_tokens": 4}},
        },
    ]
    http, bodies = scripted(
        call_events("call_9", "get_weather", '{"city": "Rome"}'),
        "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in done),
    )
    items: list[dict[str, Any]] = [{"role": "user", "content": "Rome?"}]
    async with Client(base_url=BASE, model="gpt-4.1", api="responses", http_client=http) as client:
        async with client.stream(messages=items, tools=TOOLS) as s:
            (weather,) = await s.results()
        items.extend(s.output_items())
        items.append(
            {"type": "function_call_output", "call_id": "call_9", "output": '{"sky": "clear"}'}
        )
        async with client.stream(messages=items, tools=TOOLS, tool_choice="auto") as s:
            assert await s.result() == "It is clear."
    assert weather == Weather(city="Rome")
    assert items[1] == {
        "type": "function_call",
        "call_id": "call_9",
        "name": "get_weather",
        "arguments": '{"city": "Rome"}',
    }
    assert bodies[1]["input"] == items
    for body in bodies:
        assert openai_errors(body, ResponseCreateParamsStreaming) == []


async def test_the_reply_is_only_ready_once_the_stream_succeeded() -> None:
    http, _ = scripted(text_stream('{"city": "Oslo"}'))
    async with Client(base_url=BASE, model="m", http_client=http) as client:
        async with client.stream(messages=[{"role": "user", "content": "x"}], schema=Weather) as s:
            with pytest.raises(StreamUsageError, match="read it to its end first"):
                s.assistant_message()
            await s.result()
        assert s.assistant_message() == {"role": "assistant", "content": '{"city": "Oslo"}'}
        assert s.output_items() == [{"role": "assistant", "content": '{"city": "Oslo"}'}]


async def test_a_call_without_an_id_gets_one_both_turns_share() -> None:
    stream = tool_stream(("", "get_weather", {"city": "Lima"})).replace('"id": "", ', "")
    http, _ = scripted(stream)
    async with Client(base_url=BASE, model="m", http_client=http) as client:
        async with client.stream(messages=[{"role": "user", "content": "x"}], tools=TOOLS) as s:
            await s.results()
    (call,) = s.assistant_message()["tool_calls"]
    assert call["id"] == "call_0" == s.output_items()[0]["call_id"]


def test_the_tool_loop_example_runs_its_turns(capsys: pytest.CaptureFixture[str]) -> None:
    import anyio

    spec = importlib.util.spec_from_file_location(
        "_example_tool_loop", ROOT / "examples" / "tool_loop.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example
    spec.loader.exec_module(example)
    answer = {"city": "Paris", "fahrenheit": 69.8, "summary": "clear"}
    with respx.mock(base_url=BASE) as router:
        route = router.post("/chat/completions").mock(
            side_effect=[
                # llama.cpp is asked for each forced call's arguments as its answer
                httpx.Response(200, headers=SSE, text=text_stream('{"city": "Paris"}')),
                httpx.Response(200, headers=SSE, text=text_stream('{"celsius": 21.0}')),
                httpx.Response(200, headers=SSE, text=text_stream(json.dumps(answer))),
            ]
        )
        anyio.run(example.main, BASE, "m", "llamacpp")
    out = capsys.readouterr().out
    weather = '{"city": "Paris", "celsius": 21.0, "sky": "clear"}'
    assert f'turn 1: get_weather({{"city": "Paris"}}) -> {weather}' in out
    assert 'turn 2: to_fahrenheit({"celsius": 21.0}) -> {"fahrenheit": 69.8}' in out
    assert json.loads(out.split("answer:", 1)[1]) == answer
    last = json.loads(route.calls[2].request.content)
    assert [m["role"] for m in last["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert last["messages"][3]["tool_call_id"] == "call_0"  # the server sent no id
    for call in route.calls:
        assert "tools" not in json.loads(call.request.content)


def test_the_sync_stream_gives_the_reply_too() -> None:
    from sdk import SyncClient

    http, _ = scripted(tool_stream(("call_s", "get_weather", {"city": "Bern"})))
    with (
        SyncClient(base_url=BASE, model="m", http_client=http) as client,
        client.stream(messages=[{"role": "user", "content": "x"}], tools=TOOLS) as s,
    ):
        assert s.results() == [Weather(city="Bern")]
        assert s.assistant_message()["tool_calls"][0]["id"] == "call_s"
        assert s.output_items()[0]["call_id"] == "call_s"
