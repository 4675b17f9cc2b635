"""What the Gemini backends say of the constraint Gemini applies (sans-I/O; docs/reasoning.md's
table). A retry's cures are written by :func:`sdk._http._cures.apply_cures`
(``generationConfig.frequencyPenalty``); Gemini has no whitespace setting.

:func:`gemini_policy`: ``generationConfig.responseMimeType: "application/json"`` (with
``responseJsonSchema`` or ``responseSchema``, or alone: JSON mode) is Gemini's controlled
generation, which decodes under the schema (Google's structured-output guide: "the model
will respond with a JSON string that matches the schema"), so prose at the start of the text
is the server's (:class:`~sdk.ConstraintIgnored`). No fix is known, so it is not retried. The
one known cause is a tool of the caller's (``extra={"tools": [...]}``: ``googleSearch``,
``urlContext``, retrieval) beside the MIME type: Gemini writes the tool's call as text
(go-genai #488: ``<ctrl42>call:google_search.search{queries: [...]}``), or refuses the pair
with a 400 on other models; the message names it. Dropping the caller's tool would change
what they asked, so it is not done. A schema sent as a function's parameters (``mode="tool"``)
is read as a call's arguments, which the attempt does not diagnose.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk._server_policy import ServerPolicy

__all__ = ["gemini_policy"]

SERVER = "Gemini"
"""The server, in words, for messages."""

TOOL_BESIDE = (
    "a tool of the caller's sent beside responseMimeType: Gemini writes the tool's call as "
    "text under it (go-genai #488)"
)
"""What made Gemini drop the constraint, when the body has a tool of the caller's."""

_JSON = "application/json"


def gemini_policy(body: Mapping[str, Any]) -> ServerPolicy:
    """What Gemini does with the constraint of ``body`` (as sent: a ``generationConfig``, or
    google-genai's flat config): masked when the MIME type asked for is JSON."""
    config = body.get("generationConfig", body)
    mime = config.get("responseMimeType") if isinstance(config, Mapping) else None
    masked = mime == _JSON
    tooled = masked and bool(body.get("tools"))
    return ServerPolicy(server=SERVER, masked=masked, detail=TOOL_BESIDE if tooled else "")
