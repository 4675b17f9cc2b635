"""What a retry changes in a Messages API body (``request.cures``), and what the backend says
of the constraint Claude's API applies (sans-I/O; docs/retries.md and docs/reasoning.md).

Cures. The Messages API has no sampling setting a cure could use: no frequency or repetition
penalty, and ``temperature`` / ``top_p`` / ``top_k`` are deprecated on its current models (a
non-default value is refused with a 400) and absent from the ``anthropic`` package's
``MessageCreateParams``. What it does take is the system prompt, so ``"compact_whitespace"``
and ``"less_repetition"`` each append their instruction (:data:`sdk._http._cures.INSTRUCTIONS`)
as one more ``system`` text block, after the caller's own blocks (which stay as they are, so a
prompt cache over them still hits). The other cures have no equivalent here and are ignored.

:func:`anthropic_policy`: ``output_config.format`` (JSON outputs) is applied by constrained
decoding, so the text answer under it cannot begin with prose, with one documented exception:
"the refusal message takes precedence over schema constraints" (Anthropic's structured
outputs guide). Claude's refusal arrives as text before the ``stop_reason`` that names it, so
prose at the start is either a refusal or the format not applied: a
:class:`~sdk.ConstraintIgnored` that says both, with no fix (not retried; a refusal is not
retried either). A tool's input (``strict`` tools) streams as ``input_json_delta`` pieces of a
call, which the attempt does not diagnose (a call's input is never prose), and a schema sent
without ``output_config`` (outside the subset), ``json_object`` and ``none`` are not masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._backend import GenerationRequest
from sdk._http._cures import INSTRUCTIONS
from sdk._server_policy import ServerPolicy

__all__ = ["anthropic_policy", "apply_anthropic_cures"]

SERVER = "Anthropic"
"""The server, in words, for messages."""

REFUSAL = (
    "or Claude refused: a refusal is prose that takes precedence over output_config.format, "
    "and its stop_reason comes only at the end"
)
"""What else prose under ``output_config.format`` may be (the policy's ``detail``)."""


def apply_anthropic_cures(body: dict[str, Any], request: GenerationRequest) -> None:
    """Append to ``body``'s ``system`` (built, ``request.extra`` merged) the instruction of
    each cure ``request`` asks for that has one, in the order of
    :data:`~sdk._http._cures.INSTRUCTIONS`; nothing when it asks for none."""
    said = [text for cure, text in INSTRUCTIONS.items() if cure in request.cures]
    if not said:
        return
    system = body.get("system")
    if isinstance(system, str):
        blocks: list[Any] = [{"type": "text", "text": system}] if system else []
    elif isinstance(system, list):
        blocks = list(system)
    else:
        blocks = []
    blocks.append({"type": "text", "text": " ".join(said)})
    body["system"] = blocks


def anthropic_policy(body: Mapping[str, Any], request: GenerationRequest) -> ServerPolicy:
    """What the Messages API does with the constraint of ``body`` (as sent, for
    ``request``): masked when the text answer goes under ``output_config.format``."""
    config = body.get("output_config")
    output_format = config.get("format") if isinstance(config, Mapping) else None
    masked = (
        isinstance(output_format, Mapping)
        and output_format.get("type") == "json_schema"
        and not body.get("tools")
        and request.constraint is None
    )
    return ServerPolicy(server=SERVER, masked=masked, detail=REFUSAL if masked else "")
