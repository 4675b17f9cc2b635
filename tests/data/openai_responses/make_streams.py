"""Writes the ``*.sse`` files beside it: Responses API streams written by hand from OpenAI's
documented streaming-event format (the API reference, "Responses streaming events"), with
response objects shaped like the one openai-python recorded from the live API in
``tests/lib/responses/test_responses.py``. Not recordings. Run: ``python make_streams.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent


def response(rid, status, output, usage, fmt, tools=(), **extra):
    r = {
        "id": rid,
        "object": "response",
        "created_at": 1754925861,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": "gpt-4o-2024-08-06",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": True,
        "temperature": 1.0,
        "text": {"format": fmt, "verbosity": "medium"},
        "tool_choice": "required" if tools else "auto",
        "tools": list(tools),
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }
    r.update(extra)
    return r


def usage(inp, out):
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


WEATHER_FMT = {
    "type": "json_schema",
    "name": "Weather",
    "description": None,
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature_c": {"type": "number"},
            "conditions": {"type": "string"},
        },
        "required": ["city", "temperature_c", "conditions"],
        "additionalProperties": False,
    },
}
TEXT_FMT = {"type": "text"}


class Stream:
    def __init__(self):
        self.events = []

    def add(self, type_, **fields):
        ev = {"type": type_, **fields, "sequence_number": len(self.events)}
        self.events.append(ev)

    def write(self, name):
        lines = []
        for ev in self.events:
            data = json.dumps(ev, ensure_ascii=False, separators=(",", ":"))
            lines.append(f"event: {ev['type']}\ndata: {data}\n\n")
        (OUT / f"{name}.sse").write_text("".join(lines))


def message_stream(rid, mid, pieces, fmt, terminal, inp, out, kind="output_text", **extra):
    s = Stream()
    base = response(rid, "in_progress", [], None, fmt)
    s.add("response.created", response=base)
    s.add("response.in_progress", response=base)
    item = {
        "id": mid,
        "type": "message",
        "status": "in_progress",
        "content": [],
        "role": "assistant",
    }
    s.add("response.output_item.added", output_index=0, item=item)
    if kind == "output_text":
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    else:
        part = {"type": "refusal", "refusal": ""}
    s.add("response.content_part.added", item_id=mid, output_index=0, content_index=0, part=part)
    for p in pieces:
        if kind == "output_text":
            s.add(
                "response.output_text.delta",
                item_id=mid,
                output_index=0,
                content_index=0,
                delta=p,
                logprobs=[],
                obfuscation="x" * (16 - len(p) % 16),
            )
        else:
            s.add(
                "response.refusal.delta",
                item_id=mid,
                output_index=0,
                content_index=0,
                delta=p,
                obfuscation="x" * (16 - len(p) % 16),
            )
    text = "".join(pieces)
    if terminal == "response.completed":
        if kind == "output_text":
            s.add(
                "response.output_text.done",
                item_id=mid,
                output_index=0,
                content_index=0,
                text=text,
                logprobs=[],
            )
            done_part = {**part, "text": text}
        else:
            s.add(
                "response.refusal.done", item_id=mid, output_index=0, content_index=0, refusal=text
            )
            done_part = {**part, "refusal": text}
        s.add(
            "response.content_part.done",
            item_id=mid,
            output_index=0,
            content_index=0,
            part=done_part,
        )
        done_item = {**item, "status": "completed", "content": [done_part]}
        s.add("response.output_item.done", output_index=0, item=done_item)
        s.add(
            "response.completed",
            response=response(rid, "completed", [done_item], usage(inp, out), fmt),
        )
    elif terminal == "response.failed":  # no more events about the item
        s.add("response.failed", response=response(rid, "failed", [], None, fmt, **extra))
    else:  # incomplete: the item stops where the output stopped
        done_part = {**part, "text": text}
        done_item = {**item, "status": "incomplete", "content": [done_part]}
        s.add("response.output_item.done", output_index=0, item=done_item)
        s.add(
            "response.incomplete",
            response=response(rid, "incomplete", [done_item], usage(inp, out), fmt, **extra),
        )
    return s


JSON_PIECES = [
    '{"',
    "city",
    '":"',
    "Paris",
    '","',
    "temperature",
    "_c",
    '":',
    "18",
    ".",
    "5",
    ',"',
    "conditions",
    '":"',
    "part",
    "ly",
    " cloudy",
    '"}',
]
message_stream(
    "resp_68a1c2e0f5d48190a4b1c2d3e4f5a6b7",
    "msg_68a1c2e1a2b38190b3c4d5e6f7a8b9c0",
    JSON_PIECES,
    WEATHER_FMT,
    "response.completed",
    52,
    18,
).write("json_output")
message_stream(
    "resp_68a1c2e2c3d48190a4b1c2d3e4f5a6b8",
    "msg_68a1c2e31f2e8190b3c4d5e6f7a8b9c1",
    ["I'm", " sorry", ",", " I", " can't", " help", " with", " that", "."],
    WEATHER_FMT,
    "response.completed",
    49,
    9,
    kind="refusal",
).write("refusal")
message_stream(
    "resp_68a1c2e4a1b28190a4b1c2d3e4f5a6b9",
    "msg_68a1c2e5b2c38190b3c4d5e6f7a8b9c2",
    JSON_PIECES[:9],
    WEATHER_FMT,
    "response.incomplete",
    52,
    16,
    incomplete_details={"reason": "max_output_tokens"},
    max_output_tokens=16,
).write("incomplete_max_output_tokens")
message_stream(
    "resp_68a1c2e6c3d48190a4b1c2d3e4f5a6c0",
    "msg_68a1c2e7d4e58190b3c4d5e6f7a8b9c3",
    JSON_PIECES[:5],
    WEATHER_FMT,
    "response.incomplete",
    52,
    5,
    incomplete_details={"reason": "content_filter"},
).write("incomplete_content_filter")

# Two parallel function calls.
s = Stream()
TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The current weather in a city.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    {
        "type": "function",
        "name": "get_stock_price",
        "description": None,
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"ticker": {"type": "string"}, "exchange": {"type": "string"}},
            "required": ["ticker", "exchange"],
            "additionalProperties": False,
        },
    },
]
rid = "resp_68a1c2e8e5f68190a4b1c2d3e4f5a6c1"
base = response(rid, "in_progress", [], None, TEXT_FMT, TOOLS)
s.add("response.created", response=base)
s.add("response.in_progress", response=base)
done_items = []
for index, (fid, cid, name, pieces) in enumerate(
    [
        (
            "fc_68a1c2e9f6a78190c4d5e6f7a8b9c0d1",
            "call_Xk3vQ2pL8mN4rT6yW1zA9bC5",
            "get_weather",
            ['{"', "city", '":"', "Paris", '"}'],
        ),
        (
            "fc_68a1c2ea07b88190c4d5e6f7a8b9c0d2",
            "call_Hj7fR2sD4gK9lP1qZ8xV3nM6",
            "get_stock_price",
            ['{"', "ticker", '":"', "AAPL", '","', "exchange", '":"', "NAS", "DAQ", '"}'],
        ),
    ]
):
    item = {
        "id": fid,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": cid,
        "name": name,
    }
    s.add("response.output_item.added", output_index=index, item=item)
    for p in pieces:
        s.add(
            "response.function_call_arguments.delta",
            item_id=fid,
            output_index=index,
            delta=p,
            obfuscation="x" * (16 - len(p) % 16),
        )
    args = "".join(pieces)
    s.add("response.function_call_arguments.done", item_id=fid, output_index=index, arguments=args)
    done = {**item, "status": "completed", "arguments": args}
    s.add("response.output_item.done", output_index=index, item=done)
    done_items.append(done)
s.add(
    "response.completed",
    response=response(rid, "completed", done_items, usage(87, 41), TEXT_FMT, TOOLS),
)
s.write("tool_calls")

# A response that failed mid-way.
message_stream(
    "resp_68a1c2eb18c98190a4b1c2d3e4f5a6c2",
    "msg_68a1c2ec29da8190b3c4d5e6f7a8b9c4",
    JSON_PIECES[:3],
    WEATHER_FMT,
    "response.failed",
    0,
    0,
    error={"code": "server_error", "message": "The model failed to generate a response."},
).write("failed")

# An error event.
s = Stream()
base = response("resp_68a1c2ed3aeb8190a4b1c2d3e4f5a6c3", "in_progress", [], None, WEATHER_FMT)
s.add("response.created", response=base)
s.add(
    "error",
    code="rate_limit_exceeded",
    message=(
        "Rate limit reached for gpt-4o in organization org-xyz on tokens per min (TPM): "
        "Limit 30000, Used 30000, Requested 52."
    ),
    param=None,
)
s.write("error_event")
