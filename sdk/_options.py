"""A stream's options, described once.

:class:`StreamOptions` (a ``TypedDict``) types the keyword arguments of every entry point that
starts a stream (``stream_structured(source, schema=..., **options)``,
``Client.stream(messages=..., schema=..., **options)``); :class:`StreamConfig` is the same set
resolved: defaults filled in, every value checked at the call (an error names the argument and
what it accepts), then carried as one frozen value down to the :class:`~sdk.Stream`.
:class:`RequestOptions` adds what a :class:`~sdk.Client` sends to its backend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeAlias, TypedDict, get_args

from sdk._backend import Mode
from sdk._constants import DEFAULT_CALLBACK_CONCURRENCY, DEFAULT_REGEX_TIMEOUT
from sdk._constraints import ToolChoice
from sdk._parameters import BodyParameters, check_parameters
from sdk._regex._budget import validate_timeout
from sdk._retry import Retry
from sdk._schema import Formats
from sdk._stream._dispatch import CallbackErrorPolicy, OnField
from sdk._trackers._field import Dispatch
from sdk._trackers._runaway import DEFAULT_RUNAWAY, RunawayLimits

__all__ = [
    "PendingCallbacks",
    "RequestOptions",
    "StreamConfig",
    "StreamOptions",
    "split_options",
]

PendingCallbacks: TypeAlias = Literal["cancel", "wait"]

_CALLBACK_POLICIES = get_args(CallbackErrorPolicy)
_PENDING = get_args(PendingCallbacks)
_MODES = get_args(Mode)


class StreamOptions(TypedDict, total=False):
    """How a stream behaves; every key is optional (see :class:`StreamConfig` for each)."""

    on_field: OnField
    retry: Retry | None
    max_retries: int
    on_callback_error: CallbackErrorPolicy
    max_concurrency: int
    pending_callbacks: PendingCallbacks
    lenient: bool
    deltas: bool
    progress: bool
    reasoning: bool
    reasoning_fallback: bool
    formats: Formats
    dispatch: Dispatch
    regex_timeout: float
    runaway: RunawayLimits | None


class RequestOptions(StreamOptions, BodyParameters, total=False):
    """:class:`StreamOptions` plus what a :class:`~sdk.Client` sends with each attempt (the
    request parameters openai-python names: :class:`~sdk._parameters.BodyParameters`)."""

    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    mode: Mode
    schema_name: str | None
    extra_body: Mapping[str, Any] | None
    tool_choice: ToolChoice | None
    show_schema: bool | None
    model: str | None
    timeout: Any
    extra_headers: Mapping[str, str] | None
    extra_query: Mapping[str, str] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamConfig:
    """The resolved options of one stream."""

    on_field: OnField = None
    """``{pattern: callback}`` (JSON Pointers; ``*`` one segment, ``**`` any depth), or one
    callback for every field. Callbacks take the :class:`~sdk.FieldEvent`; sync ones run
    inline, ``async`` ones in the stream's task group."""
    retry: Retry | None = None
    """The retry policy of the answers (output errors); ``None``: one answer."""
    max_retries: int = 0
    """How many times in a row a transport failure (an HTTP status worth retrying, a
    connection failure) is retried within an attempt, with backoff (:mod:`sdk._retry`); it
    does not count against ``retry.max_attempts``. A :class:`~sdk.Client` sets its own
    ``max_retries`` (:data:`~sdk._constants.DEFAULT_MAX_RETRIES` by default) unless the call
    gives one."""
    on_callback_error: CallbackErrorPolicy = "raise"
    """A callback that raises: ``"raise"`` fails the stream with :class:`~sdk.CallbackError`;
    ``"log"`` logs it on the ``fieldstream`` logger and goes on; ``"ignore"`` goes on."""
    max_concurrency: int = DEFAULT_CALLBACK_CONCURRENCY
    """How many async callbacks may run at once."""
    pending_callbacks: PendingCallbacks = "cancel"
    """When the stream fails or is left before its end: ``"cancel"`` the async callbacks still
    running, or ``"wait"`` for them (a cancelled consumer always cancels them). On success the
    stream always waits for them, so their errors are the stream's."""
    lenient: bool = False
    """Accept prose or a code fence around the document (for servers that do not constrain),
    and route a ``<think>…</think>`` block before it to the reasoning."""
    deltas: bool = False
    """Also yield :class:`~sdk.TextDelta` events as string fields stream."""
    progress: bool = False
    """Also yield progress events: :class:`~sdk.AttemptStarted`, :class:`~sdk.AttemptFailed`,
    :class:`~sdk.Backtracked` (a value repaired in place), :class:`~sdk.UsageReported`,
    :class:`~sdk.StreamEnded`."""
    reasoning: bool = False
    """Also yield :class:`~sdk.ReasoningDelta` events as a reasoning model thinks."""
    reasoning_fallback: bool = False
    """When the content is empty and the reasoning is itself the JSON document (a server that
    applied its grammar inside the thinking: llama.cpp #20345), read the document from the
    reasoning instead of failing with :class:`~sdk.AnswerInReasoning` (docs/reasoning.md)."""
    formats: Formats = "annotate"
    """JSON Schema's ``format``: an annotation (``"annotate"``, Draft 2020-12's default), or
    checked (``"assert"``: ``date``, ``date-time``, ``uuid``, ``email``, ``uri``... by
    fieldstream's own checkers, not jsonschema's; ``sdk._schema._formats.CHECKED`` lists them,
    and ``date``, ``time``, ``date-time``, ``uuid`` and ``ipv4`` are checked while they stream
    too). A format it does not check stays an annotation. A pydantic type's formats are
    pydantic's to judge."""
    dispatch: Dispatch = "validated"
    """When a field's event goes out (iterator and ``on_field`` alike): ``"validated"`` (the
    default) runs the field's own pydantic validators first, and holds the events of a model
    that has a model validator until its object closed and the validator passed (the root
    model's: until the end); ``"eager"`` sends each one as soon as the value is final and
    passed the JSON Schema checks, so a callback may see a value a validator refuses a moment
    later (see docs/events.md)."""
    regex_timeout: float = DEFAULT_REGEX_TIMEOUT
    """Seconds each pattern check may take (JSON Schema ``pattern`` and ``patternProperties``,
    a pydantic ``Field(pattern=...)`` checked early, a :class:`~sdk.Regex`): a backtracking
    pattern such as ``^(a|aa)+$`` can take exponential time on a string that almost matches.
    The check of a final value that runs out fails the stream with :class:`~sdk.PatternTimeout`
    (not retried); the check of a string's prefix that runs out leaves the verdict to the final
    check. The default, 0.1, is far above what an ordinary pattern takes (microseconds)."""
    runaway: RunawayLimits | None = DEFAULT_RUNAWAY
    """When output that follows the schema is a runaway all the same (:class:`~sdk.
    RunawayLimits`: whitespace between tokens past any layout, a string's or an array's tail
    repeating one unit): the attempt stops there with :class:`~sdk.RunawayWhitespace` or
    :class:`~sdk.RepeatedOutput`, and the retry asks the server for the error's cure
    (``docs/retries.md``). ``None``: no check."""

    def __post_init__(self) -> None:
        if self.retry is not None and not isinstance(self.retry, Retry):
            raise TypeError(f"retry must be a sdk.Retry (or None), not {type(self.retry).__name__}")
        if not _is_int(self.max_retries) or self.max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, not {self.max_retries!r}")
        _choice("on_callback_error", self.on_callback_error, _CALLBACK_POLICIES)
        _choice("pending_callbacks", self.pending_callbacks, _PENDING)
        _choice("formats", self.formats, ("annotate", "assert"))
        _choice("dispatch", self.dispatch, ("validated", "eager"))
        validate_timeout(self.regex_timeout)
        if self.runaway is not None and not isinstance(self.runaway, RunawayLimits):
            raise TypeError(
                f"runaway must be a sdk.RunawayLimits (or None), not {type(self.runaway).__name__}"
            )
        if (
            not isinstance(self.max_concurrency, int)
            or isinstance(self.max_concurrency, bool)
            or self.max_concurrency < 1
        ):
            raise ValueError(f"max_concurrency must be an int >= 1, not {self.max_concurrency!r}")
        for name in ("lenient", "deltas", "progress", "reasoning", "reasoning_fallback"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, not {getattr(self, name)!r}")


_STREAM_KEYS = frozenset(f.name for f in fields(StreamConfig))
_REQUEST_KEYS = (RequestOptions.__optional_keys__ | RequestOptions.__required_keys__) - _STREAM_KEYS


def split_options(
    options: Mapping[str, Any], *, where: str, request: bool
) -> tuple[StreamConfig, dict[str, Any]]:
    """Resolve ``options`` given to ``where`` (for messages): the stream's config, and (when
    ``request``) the request options, checked for their kind. Unknown names raise
    ``TypeError`` naming them and what is accepted."""
    allowed = _STREAM_KEYS | (_REQUEST_KEYS if request else frozenset())
    unknown = sorted(set(options) - allowed)
    if unknown:
        hint = (
            "; body parameters the client does not name go in extra_body={...}" if request else ""
        )
        raise TypeError(
            f"{where}() got unexpected argument(s) {', '.join(map(repr, unknown))}{hint}"
            f" (accepted: {', '.join(sorted(allowed))})"
        )
    config = StreamConfig(**{k: v for k, v in options.items() if k in _STREAM_KEYS})
    rest = {k: v for k, v in options.items() if k in _REQUEST_KEYS}
    _check_request(rest)
    parameters = check_parameters(rest)
    rest = {k: v for k, v in rest.items() if k not in BodyParameters.__optional_keys__}
    if parameters:
        rest["parameters"] = parameters
    return config, rest


def _check_request(options: Mapping[str, Any]) -> None:
    """Each request option is of the kind it must be (``None`` leaves it unset)."""
    if "mode" in options:
        _choice("mode", options["mode"], _MODES)
    checks: dict[str, tuple[Any, str]] = {
        "max_tokens": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
        "temperature": (lambda v: _is_number(v) and 0 <= v < math.inf, "a finite number >= 0"),
        "top_p": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1]"),
        "seed": (_is_int, "an int"),
        "schema_name": (lambda v: isinstance(v, str) and v != "", "a non-empty str"),
        "extra_body": (lambda v: isinstance(v, Mapping), "a mapping of body parameters"),
        "show_schema": (lambda v: isinstance(v, bool), "True or False"),
        "model": (lambda v: isinstance(v, str) and v != "", "a non-empty str"),
        "timeout": (
            lambda v: (_is_number(v) and v > 0) or type(v).__name__ == "Timeout",
            "seconds > 0 or an httpx.Timeout",
        ),
        "extra_headers": (_str_mapping, "a mapping of header names to str values"),
        "extra_query": (_str_mapping, "a mapping of query parameter names to str values"),
    }
    for name, (ok, what) in checks.items():
        value = options.get(name)
        if value is not None and not ok(value):
            raise TypeError(f"{name} must be {what} (or None), not {value!r}")


def _str_mapping(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
