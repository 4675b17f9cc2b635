"""The request parameters openai-python names for a streamed Chat Completions or Responses call,
typed as it types them, and their checks (sans-I/O).

A caller gives them to ``Client.stream(...)`` (and ``batch``, ``with_options``) by name, as to
``client.chat.completions.create(...)``; :func:`check_parameters` checks each at the call and
groups them into :attr:`sdk.GenerationRequest.parameters`, which each provider writes its own
way (for OpenAI: :mod:`sdk._http.openai._chat_request`, :mod:`sdk._http.openai.
_responses_request`, which also say which names the Responses API has no equivalent for).
``None`` leaves a parameter unset.

The Responses API's ``reasoning={"effort", "summary"}`` object is given as ``reasoning_effort=``
and ``reasoning_summary=``: ``reasoning=`` is the stream's own option (reasoning events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypedDict

from sdk._errors import StreamUsageError

__all__ = [
    "PARAMETERS",
    "BodyParameters",
    "PredictionParam",
    "ReasoningEffort",
    "ReasoningSummary",
    "ServiceTier",
    "StreamOptionsParam",
    "check_parameters",
    "check_single_choice",
]

ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""openai's ``ReasoningEffort``."""
ReasoningSummary: TypeAlias = Literal["auto", "concise", "detailed"]
"""The ``summary`` of openai's Responses ``Reasoning``."""
ServiceTier: TypeAlias = Literal["auto", "default", "flex", "scale", "priority", "fast"]
"""The ``service_tier`` values openai-python's request types take."""


class StreamOptionsParam(TypedDict, total=False):
    """openai's ``ChatCompletionStreamOptionsParam``."""

    include_usage: bool
    include_obfuscation: bool


class PredictionParam(TypedDict):
    """openai's ``ChatCompletionPredictionContentParam`` (predicted output)."""

    type: Literal["content"]
    content: str | list[dict[str, Any]]


class BodyParameters(TypedDict, total=False):
    """The request parameters a :class:`~sdk.Client` call names besides the sampling ones
    (``max_tokens``, ``temperature``, ``top_p``, ``seed``)."""

    max_completion_tokens: int | None
    stop: str | Sequence[str] | None
    logprobs: bool | None
    top_logprobs: int | None
    parallel_tool_calls: bool | None
    reasoning_effort: ReasoningEffort | None
    reasoning_summary: ReasoningSummary | None
    user: str | None
    metadata: Mapping[str, str] | None
    store: bool | None
    service_tier: ServiceTier | None
    frequency_penalty: float | None
    presence_penalty: float | None
    prediction: PredictionParam | None
    stream_options: StreamOptionsParam | None


PARAMETERS = frozenset(BodyParameters.__optional_keys__)
"""The names of :class:`BodyParameters`."""

_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_TIERS = ("auto", "default", "flex", "scale", "priority", "fast")


def _int(value: object, low: int, high: int | None = None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )


def _penalty(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -2 <= value <= 2


def _stop(value: object) -> bool:
    if isinstance(value, str):
        return True
    return (
        isinstance(value, Sequence)
        and len(value) <= 4
        and all(isinstance(v, str) and v for v in value)
    )


def _metadata(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _prediction(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("type") == "content"
        and isinstance(value.get("content"), (str, list))
    )


def _stream_options(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and set(value) <= {"include_usage", "include_obfuscation"}
        and all(isinstance(v, bool) for v in value.values())
    )


_CHECKS: dict[str, tuple[Any, str]] = {
    "max_completion_tokens": (lambda v: _int(v, 1), "an int >= 1"),
    "stop": (_stop, "a str or a list of at most 4 non-empty str"),
    "logprobs": (lambda v: isinstance(v, bool), "True or False"),
    "top_logprobs": (lambda v: _int(v, 0, 20), "an int from 0 to 20"),
    "parallel_tool_calls": (lambda v: isinstance(v, bool), "True or False"),
    "reasoning_effort": (lambda v: v in _EFFORTS, f"one of {', '.join(map(repr, _EFFORTS))}"),
    "reasoning_summary": (
        lambda v: v in ("auto", "concise", "detailed"),
        "'auto', 'concise' or 'detailed'",
    ),
    "user": (lambda v: isinstance(v, str), "a str"),
    "metadata": (_metadata, "a mapping of str to str"),
    "store": (lambda v: isinstance(v, bool), "True or False"),
    "service_tier": (lambda v: v in _TIERS, f"one of {', '.join(map(repr, _TIERS))}"),
    "frequency_penalty": (_penalty, "a number from -2 to 2"),
    "presence_penalty": (_penalty, "a number from -2 to 2"),
    "prediction": (_prediction, "{'type': 'content', 'content': ...}"),
    "stream_options": (
        _stream_options,
        "{'include_usage': bool, 'include_obfuscation': bool} ({} sends none)",
    ),
}


def check_parameters(options: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`PARAMETERS` among ``options`` that are set (not ``None``), each checked:
    ``TypeError`` naming the one of the wrong kind and what it takes; ``ValueError`` when
    ``max_tokens`` and ``max_completion_tokens`` are both given (one limit, two names)."""
    found: dict[str, Any] = {}
    for name in sorted(PARAMETERS & set(options)):
        value = options[name]
        if value is None:
            continue
        ok, what = _CHECKS[name]
        if not ok(value):
            raise TypeError(f"{name} must be {what} (or None), not {value!r}")
        found[name] = value
    if options.get("max_tokens") is not None and "max_completion_tokens" in found:
        raise ValueError(
            "give max_tokens or max_completion_tokens, not both: they are one limit "
            "(max_completion_tokens is OpenAI's current name; see docs/servers.md)"
        )
    return found


def check_single_choice(extra: Mapping[str, Any]) -> None:
    """Raise :class:`~sdk.StreamUsageError` when ``extra`` asks for more than one choice.

    One structured stream reads one document per choice; ``n > 1`` would interleave several
    documents in one stream, so it is refused before any request is sent.
    """
    n = extra.get("n")
    if n is not None and n != 1:
        raise StreamUsageError(
            f"n={n!r} is not supported: a structured stream reads one choice. "
            "Start one stream per completion instead (they may run concurrently)."
        )
