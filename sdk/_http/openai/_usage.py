"""OpenAI's usage objects -> :class:`~sdk.Usage`, every detail kept (sans-I/O).

Chat Completions: ``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details``
(``cached_tokens``, ``audio_tokens``), ``completion_tokens_details`` (``reasoning_tokens``,
``audio_tokens``, ``accepted_prediction_tokens``, ``rejected_prediction_tokens``). The Responses
API: ``input_tokens``, ``output_tokens``, ``input_tokens_details``, ``output_tokens_details``,
kept under the Chat names. A detail that is not a whole number (``null``, a server's own
extension) is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._backend import Usage

__all__ = ["chat_usage", "responses_usage"]


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """A Chat Completions ``usage`` object."""
    return _usage(usage, "prompt_tokens", "completion_tokens")


def responses_usage(usage: Mapping[str, Any]) -> Usage:
    """A Responses API ``usage`` object."""
    return _usage(usage, "input_tokens", "output_tokens")


def _usage(usage: Mapping[str, Any], prompt: str, completion: str) -> Usage:
    return Usage(
        prompt_tokens=_int(usage.get(prompt)),
        completion_tokens=_int(usage.get(completion)),
        prompt_tokens_details=_details(usage.get(f"{prompt}_details")),
        completion_tokens_details=_details(usage.get(f"{completion}_details")),
    )


def _details(details: Any) -> dict[str, int]:
    if not isinstance(details, Mapping):
        return {}
    return {str(k): v for k, v in details.items() if isinstance(v, int) and not isinstance(v, bool)}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
