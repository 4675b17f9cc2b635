"""What a backend knows of the constraint its server applies to one request (sans-I/O).

A backend that knows its server puts a :class:`ServerPolicy` on the generation it returns
(:attr:`sdk._backend.TextChunks.server_policy`); the stream hands it to the attempt
(:class:`~sdk._stream._attempt.AttemptState`), which uses it to tell a server's fault from the
model's (:mod:`sdk._stream._misroute`): prose at the start of a document the server claims to
mask is the server's (:class:`~sdk.ConstraintIgnored`), and an answer written in the reasoning
channel names the server's fix (:class:`~sdk.AnswerInReasoning`). A generation without a
policy (any source of the caller's, a backend that does not say) is read as before: a syntax
error is the model's, and an answer in the reasoning has no fix to ask for.

The per-server table (what is detected, what is done, why) is in docs/reasoning.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerPolicy", "attach_policy"]


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """The constraint a server applies to one request, and its known fixes."""

    server: str
    """The server, in words, for messages (``"Ollama"``, ``"llama.cpp"``)."""
    masked: bool
    """The server is sent a schema it masks the tokens with (a grammar), so no output byte
    can break the JSON syntax: output that does was not masked."""
    ignored_cure: str | None = None
    """The cure (a name from :data:`sdk._backend.CURES`) that makes the server apply the
    constraint it dropped; ``None``: no fix is known (the error is not retried)."""
    reasoning_cure: str | None = None
    """The cure that keeps the answer out of the reasoning channel; ``None``: none known."""
    detail: str = ""
    """What about the request made the server drop the constraint, when known (for the
    message: ``"format sent with think=false"``)."""


def attach_policy(generation: object, policy: ServerPolicy | None) -> None:
    """Put ``policy`` on ``generation`` (a :class:`~sdk._backend.TextChunks`; anything else
    is left as it is)."""
    if policy is not None and hasattr(generation, "server_policy"):
        generation.server_policy = policy
