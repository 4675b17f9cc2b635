"""OpenTelemetry spans of a stream (the ``otel`` extra: ``pip install 'fieldstream[otel]'``).

One span per stream (``chat {model}``, as the GenAI semantic conventions name an inference
span: ``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``, ``error.type``), and under it one span per attempt (``fieldstream.attempt``:
its number, its usage, and when it failed, why: ``fieldstream.abort.reason`` (the error's
class), the violation's ``fieldstream.violation.pointer`` and ``.keyword``, whether it will be
retried). The spans go to the tracer provider the application set up
(``opentelemetry.trace.set_tracer_provider``), or nowhere.

No cost without the extra: ``opentelemetry`` is imported the first time a stream is entered,
once; when it is not installed, :func:`stream_trace` returns ``None`` and the stream does
nothing more. Nothing the model wrote, no message and no error text is put in a span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._backend import Usage
from sdk._errors import SchemaViolation, TransportError
from sdk._records import AttemptInfo

__all__ = ["StreamTrace", "stream_trace"]

_UNSET: Any = object()
_tracer: Any = _UNSET


def _get_tracer() -> Any:
    """The ``fieldstream`` tracer, or ``None`` without opentelemetry (looked for once)."""
    global _tracer
    if _tracer is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:
            _tracer = None
        else:
            from sdk._version import __version__

            _tracer = trace.get_tracer("fieldstream", __version__)
    return _tracer


def stream_trace(attributes: Mapping[str, Any]) -> StreamTrace | None:
    """The spans of one stream, started now; ``None`` without opentelemetry."""
    tracer = _get_tracer()
    return None if tracer is None else StreamTrace(tracer, attributes)


class StreamTrace:
    """A stream's span and its attempts' spans (made by :func:`stream_trace`)."""

    __slots__ = ("_attempt", "_context", "_span", "_tracer")

    def __init__(self, tracer: Any, attributes: Mapping[str, Any]) -> None:
        from opentelemetry import trace

        base = {"gen_ai.operation.name": "chat"}
        base.update({k: v for k, v in attributes.items() if v is not None})
        model = base.get("gen_ai.request.model")
        self._tracer = tracer
        self._span = tracer.start_span(
            f"chat {model}" if model else "chat", kind=trace.SpanKind.CLIENT, attributes=base
        )
        self._context = trace.set_span_in_context(self._span)
        self._attempt: Any = None

    def attempt_started(self, number: int) -> None:
        """An attempt began (its request is about to be sent)."""
        self._end_attempt()
        self._attempt = self._tracer.start_span(
            "fieldstream.attempt", context=self._context, attributes={"fieldstream.attempt": number}
        )

    def attempt_ended(self, info: AttemptInfo, *, retrying: bool | None = None) -> None:
        """An attempt ended (recorded as ``info``); ``retrying``: whether another follows."""
        span = self._attempt
        if span is None:
            return
        self._attempt = None
        _usage(span, info.usage)
        error = info.error
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("fieldstream.abort.reason", type(error).__name__)
            span.set_attribute("error.type", type(error).__name__)
            if isinstance(error, SchemaViolation):
                span.set_attribute("fieldstream.violation.pointer", error.pointer or "/")
                if error.keyword:
                    span.set_attribute("fieldstream.violation.keyword", error.keyword)
            if isinstance(error, TransportError) and error.status is not None:
                span.set_attribute("http.response.status_code", error.status)
            if retrying is not None:
                span.set_attribute("fieldstream.retrying", retrying)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        span.end()

    def ended(self, *, attempts: int, usage: Usage, error: BaseException | None) -> None:
        """The stream ended (succeeded, failed, or was left): its totals."""
        self._end_attempt()
        span = self._span
        span.set_attribute("fieldstream.attempts", attempts)
        _usage(span, usage)
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
        span.end()

    def _end_attempt(self) -> None:
        if self._attempt is not None:  # left before it was recorded
            self._attempt.set_attribute("fieldstream.abort.reason", "closed")
            self._attempt.end()
            self._attempt = None


def _usage(span: Any, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
