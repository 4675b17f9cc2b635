"""fieldstream's client: stream structured LLM output, field by field.

The layers, top to bottom (``docs/architecture.md`` draws the whole house):

* :class:`Client` — starts generations on an OpenAI-compatible server or the local engine and
  returns a :class:`Stream`; :func:`stream_structured` does the same for any async source of
  text deltas; :class:`SyncClient` is the same client for code without an event loop.
* :class:`Stream` — an async context manager and async iterator of :data:`Event`
  (``Stream.fields()``: field events only); runs ``on_field`` callbacks exactly once per
  field, aborts on a violation, retries a bad answer at once (:class:`Retry`) and a transport
  failure with backoff (``max_retries``), and validates the whole result
  (``await stream.result()``).
* :func:`compile_schema` — a schema (pydantic type, or JSON Schema in any dialect from draft-04
  to 2020-12) compiled once into a :class:`CompiledSchema`, which every entry point accepts.
* :class:`FieldTracker` — the sans-I/O core: feed text, get field events; it knows each
  field's piece of the schema and raises :class:`SchemaViolation` as early as the bytes allow.
* Constraints beyond JSON Schema, as values: :class:`Choice`, :class:`Regex`,
  :class:`Grammar`, :class:`StructuralTag` (of :class:`Tag` segments; the result is a
  :class:`TaggedText`), and several tools at once (:class:`Tool`, ``tools=``).
* For a web page: :func:`sse_events` runs a stream as server-sent events (:func:`format_sse`
  formats one event), so a browser can fill a form field by field.

Errors form one tree under :class:`StreamError` (drawn in ``sdk._errors``); misuse of the API
raises :class:`StreamUsageError`, a ``RuntimeError``; an unusable schema, :class:`SchemaError`.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from sdk._backend import Backend, Delta, GenerationRequest, Message, Usage
from sdk._constraints import Choice, Grammar, Regex, StructuralTag, Tag, Tool
from sdk._errors import (
    AnswerInReasoning,
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BackendError,
    BadRequestError,
    CallbackError,
    ConflictError,
    ConstraintIgnored,
    ContentFilteredError,
    InternalServerError,
    MissingDependencyError,
    NotFoundError,
    OutputSyntaxError,
    PartialArgumentsError,
    PatternTimeout,
    PermissionDeniedError,
    RateLimitError,
    RefusedError,
    RepeatedOutput,
    RetriesExhausted,
    RunawayOutput,
    RunawayWhitespace,
    SchemaError,
    SchemaViolation,
    StreamError,
    StreamUsageError,
    TransportError,
    TruncatedError,
    UnprocessableEntityError,
    UnsupportedConstraint,
    ValidationFailed,
)
from sdk._events import (
    AttemptFailed,
    AttemptStarted,
    Backtracked,
    Event,
    FieldEvent,
    ReasoningDelta,
    StreamEnded,
    StreamEvent,
    TextDelta,
    UsageReported,
)
from sdk._logs import setup_logging as _setup_logging
from sdk._partial_typed import FieldPath, Partial, field_path
from sdk._records import Attempt, AttemptInfo
from sdk._retry import Retry
from sdk._schema import CompiledSchema, compile_schema
from sdk._trackers._field import FieldTracker
from sdk._trackers._runaway import RunawayLimits
from sdk._trackers._segments import Segment, TaggedText
from sdk._version import __version__
from sdk._web._sse_writer import format_sse, sse_events

_setup_logging()  # FIELDSTREAM_LOG=debug, as openai-python reads OPENAI_LOG at import

if _typing.TYPE_CHECKING:
    from sdk._batch import BatchRequest, BatchResult
    from sdk._client import Client
    from sdk._stream._stream import Stream
    from sdk._structured import stream_structured
    from sdk._sync import SyncClient, SyncStream

# The async shell (anyio, httpx) is imported on first use, so that the sans-I/O core
# (``from sdk import FieldTracker``) stands alone.
_LAZY = {
    "BatchRequest": "sdk._batch",
    "BatchResult": "sdk._batch",
    "Client": "sdk._client",
    "Stream": "sdk._stream._stream",
    "SyncClient": "sdk._sync",
    "SyncStream": "sdk._sync",
    "stream_structured": "sdk._structured",
}


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sdk' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AnswerInReasoning",
    "Attempt",
    "AttemptFailed",
    "AttemptInfo",
    "AttemptStarted",
    "AuthenticationError",
    "Backend",
    "BackendError",
    "Backtracked",
    "BadRequestError",
    "BatchRequest",
    "BatchResult",
    "CallbackError",
    "Choice",
    "Client",
    "CompiledSchema",
    "ConflictError",
    "ConstraintIgnored",
    "ContentFilteredError",
    "Delta",
    "Event",
    "FieldEvent",
    "FieldPath",
    "FieldTracker",
    "GenerationRequest",
    "Grammar",
    "InternalServerError",
    "Message",
    "MissingDependencyError",
    "NotFoundError",
    "OutputSyntaxError",
    "Partial",
    "PartialArgumentsError",
    "PatternTimeout",
    "PermissionDeniedError",
    "RateLimitError",
    "ReasoningDelta",
    "RefusedError",
    "Regex",
    "RepeatedOutput",
    "RetriesExhausted",
    "Retry",
    "RunawayLimits",
    "RunawayOutput",
    "RunawayWhitespace",
    "SchemaError",
    "SchemaViolation",
    "Segment",
    "Stream",
    "StreamEnded",
    "StreamError",
    "StreamEvent",
    "StreamUsageError",
    "StructuralTag",
    "SyncClient",
    "SyncStream",
    "Tag",
    "TaggedText",
    "TextDelta",
    "Tool",
    "TransportError",
    "TruncatedError",
    "UnprocessableEntityError",
    "UnsupportedConstraint",
    "Usage",
    "UsageReported",
    "ValidationFailed",
    "__version__",
    "compile_schema",
    "field_path",
    "format_sse",
    "sse_events",
    "stream_structured",
]
