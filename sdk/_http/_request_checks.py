"""What the providers that take JSON Schema only refuse the same way, before any request
(:class:`~sdk.UnsupportedConstraint`, worded for the API that cannot take it), and whether a
request forces a tool call. Each provider's ``check_*_request`` calls these with its API's
words, in its own order, and adds what only it refuses."""

from __future__ import annotations

from collections.abc import Collection

from sdk._backend import GenerationRequest
from sdk._errors import UnsupportedConstraint

__all__ = ["calls_forced", "refuse_constraint", "refuse_effort", "refuse_parameters"]


def calls_forced(request: GenerationRequest) -> bool:
    """Whether ``request`` forces a tool call (its message text is then never the answer: the
    decoders drop message text that is only whitespace)."""
    return request.mode == "tool" and request.tool_choice not in ("auto", "none")


def refuse_constraint(request: GenerationRequest, api: str, takes: str) -> None:
    """Refuse a constraint other than JSON Schema (unless ``mode="none"``): ``api`` ("Gemini")
    cannot be sent it, and ``takes`` says what it takes ("it takes JSON Schema only")."""
    if request.constraint is not None and request.mode != "none":
        kind = type(request.constraint).__name__
        raise UnsupportedConstraint(
            f"{api} cannot be sent a {kind} ({takes}); pass mode='none' to send nothing and "
            f"have the client alone check the {kind}"
        )


def refuse_parameters(
    request: GenerationRequest, accepted: Collection[str], api: str, own: str
) -> None:
    """Refuse a named parameter not in ``accepted``: it has no equivalent in ``api``; ``own``
    says what to pass in ``extra=`` instead ("Ollama's own field in extra=")."""
    for name in request.parameters:
        if name not in accepted:
            raise UnsupportedConstraint(
                f"{name}= has no equivalent in {api}; leave it out (or pass {own})"
            )


def refuse_effort(request: GenerationRequest, efforts: Collection[str], field: str) -> None:
    """Refuse a ``reasoning_effort`` not among ``efforts``, which ``field`` ("Ollama's think")
    takes."""
    effort = request.parameters.get("reasoning_effort")
    if effort is not None and effort not in efforts:
        raise UnsupportedConstraint(
            f"reasoning_effort={effort!r} has no equivalent in {field} (it takes "
            f"{', '.join(map(repr, efforts))})"
        )
