"""OpenTelemetry spans (the ``otel`` extra), read back from the SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from tests.sdk._http_support import Body

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is missing")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from sdk import Client, Retry, SchemaViolation

pytestmark = pytest.mark.anyio

BASE = "http://llm.test/v1"
MESSAGES = [{"role": "user", "content": "hi"}]
SCHEMA = {
    "type": "object",
    "properties": {"kind": {"enum": ["cat", "dog"]}},
    "required": ["kind"],
    "additionalProperties": False,
}
EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(tracer_provider)


@pytest.fixture(autouse=True)
def spans() -> Iterator[None]:
    EXPORTER.clear()
    yield
    EXPORTER.clear()


def sse(*texts: str, usage: tuple[int, int] = (9, 4)) -> httpx.Response:
    parts = [
        b"data: "
        + json.dumps({"choices": [{"index": 0, "delta": {"content": t}}]}).encode()
        + b"\n\n"
        for t in texts
    ]
    parts.append(
        b"data: "
        + json.dumps(
            {
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
            }
        ).encode()
        + b"\n\n"
    )
    parts.append(b"data: [DONE]\n\n")
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body(parts))


async def _no_sleep(seconds: float) -> None:
    pass


def by_name(name: str) -> list[ReadableSpan]:
    return [s for s in EXPORTER.get_finished_spans() if s.name == name]


async def test_a_span_per_stream_and_per_attempt_with_the_abort() -> None:
    with respx.mock(base_url=BASE) as router:
        router.post("/chat/completions").mock(
            side_effect=[sse('{"kind": "fi'), sse('{"kind": "dog"}', usage=(12, 5))]
        )
        async with Client(base_url=BASE, model="gpt-test") as client:
            async with client.stream(
                messages=MESSAGES, schema=SCHEMA, retry=Retry(max_attempts=2, sleep=_no_sleep)
            ) as s:
                assert await s.result() == {"kind": "dog"}
    (stream,) = by_name("chat gpt-test")
    attempts = sorted(by_name("fieldstream.attempt"), key=lambda a: a.start_time or 0)
    assert stream.attributes is not None
    assert stream.attributes["gen_ai.operation.name"] == "chat"
    assert stream.attributes["gen_ai.request.model"] == "gpt-test"
    assert stream.attributes["server.address"] == "llm.test"
    assert stream.attributes["fieldstream.attempts"] == 2
    assert stream.kind == trace.SpanKind.CLIENT
    assert [a.attributes["fieldstream.attempt"] for a in attempts if a.attributes] == [1, 2]
    assert all(
        a.parent is not None and a.parent.span_id == stream.context.span_id for a in attempts
    )
    first, second = (a.attributes or {} for a in attempts)
    assert first["fieldstream.abort.reason"] == "SchemaViolation"
    assert first["fieldstream.violation.pointer"] == "/kind"
    assert first["fieldstream.violation.keyword"] == "enum"
    assert first["fieldstream.retrying"] is True
    assert "fieldstream.abort.reason" not in second
    assert (second["gen_ai.usage.input_tokens"], second["gen_ai.usage.output_tokens"]) == (12, 5)
    assert stream.attributes["gen_ai.usage.input_tokens"] == s.usage.prompt_tokens
    assert stream.status.is_ok


async def test_a_failed_stream_says_why() -> None:
    with respx.mock(base_url=BASE) as router:
        router.post("/chat/completions").mock(return_value=sse('{"kind": "fi'))
        async with Client(base_url=BASE, model="m") as client:
            with pytest.raises(SchemaViolation):
                async with client.stream(messages=MESSAGES, schema=SCHEMA) as s:
                    await s.result()
    (stream,) = by_name("chat m")
    assert stream.attributes is not None
    assert stream.attributes["error.type"] == "SchemaViolation"
    assert not stream.status.is_ok
    (attempt,) = by_name("fieldstream.attempt")
    assert (attempt.attributes or {})["fieldstream.retrying"] is False


def test_without_the_extra_nothing_is_imported() -> None:
    # A stream in a process where opentelemetry cannot be imported: it works, and nothing
    # of opentelemetry is loaded.
    script = """
import sys, asyncio
sys.modules["opentelemetry"] = None  # as if not installed
import sdk

async def chunks():
    yield '{"a": 1}'

async def main():
    async with sdk.stream_structured(chunks(), schema={"type": "object"}) as s:
        print(await s.result())

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m]))
"""
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'a': 1}", "[]"]
