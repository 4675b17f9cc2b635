"""Output that went elsewhere, or came unconstrained: the two checks of a reasoning model's
failures that are the server's, not the model's (sans-I/O; docs/reasoning.md).

- :func:`document_in_reasoning`: at the end of an attempt whose content is empty, the
  reasoning text is itself one JSON document (an object or an array, the whole text, nothing
  around it): the server applied its grammar inside the thinking (llama.cpp #20345, vLLM
  #16182), or the model thought its answer. A thought that merely quotes JSON among words is
  not one.
- :func:`ignored_constraint`: the syntax error that ended an attempt, under a schema the server
  claims to mask, is one no masked output can have: the first non-whitespace character cannot
  begin a JSON object, array or string (prose: "Sure! Here...", "The answer"), or a second
  ``{`` right after the first (ollama-python #523). A mask lets no such byte through, so the
  server did not apply it. An error later in the document is the model's (a server that masks
  cannot write it either, but one that does not mask and says it does would have failed at the
  first byte: the heuristic errs towards blaming the model).

Both run once per attempt at most (at its end, or on the error that ended it): nothing here
is on the per-chunk path.
"""

from __future__ import annotations

import json
import re

__all__ = ["document_in_reasoning", "ignored_constraint"]

_STRAY_BRACE = re.compile(r"\s*\{\s*\{")
_SHOWN = 40  # characters of the output a message quotes


def document_in_reasoning(reasoning: str) -> str | None:
    """The JSON document that ``reasoning`` is, whole (an object or an array, whitespace
    around it stripped), or ``None``."""
    text = reasoning.strip()
    if text[:1] not in ("{", "[") or text[-1:] not in ("}", "]"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return text if isinstance(value, (dict, list)) else None


def ignored_constraint(text: str, offset: int | None) -> str | None:
    """Why the output ``text``, whose syntax broke at ``offset``, cannot have come through a
    schema mask (the cause, in words), or ``None`` when it can (the model's mistake)."""
    stripped = text.lstrip()
    if offset is None or not stripped:
        return None
    start = len(text) - len(stripped)
    if stripped[0] not in '{["':
        shown = stripped[:_SHOWN] + ("..." if len(stripped) > _SHOWN else "")
        return f"prose at the start of the output ({shown!r}): no JSON document begins so"
    stray = _STRAY_BRACE.match(text)
    if stray is not None and offset == stray.end() - 1 and offset > start:
        return "a stray '{' before the document (the output begins with two)"
    return None
