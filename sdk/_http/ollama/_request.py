"""The body of one ``POST /api/chat`` request to Ollama (sans-I/O).

How the schema travels, by ``request.mode``:

- ``"json_schema"``: ``format: <the schema>``, as given: Ollama turns it into a grammar (with
  llama.cpp's JSON-Schema-to-grammar converter, which ignores what it does not know); the
  answer is the message's ``content``, and fieldstream checks the whole schema.
- ``"json_object"``: ``format: "json"`` (some JSON value; fieldstream checks the schema).
- ``"tool"`` with ``tool_choice="auto"`` (or several tools): ``tools``, each a function with
  its schema as ``parameters``; the model decides whether to call. Ollama cannot force a call
  (it has no ``tool_choice``) and does not constrain arguments, so a forced call is refused
  before sending (:func:`check_ollama_request`); ``tool_choice="none"`` sends no tools.
- ``"none"``: nothing (fieldstream checks the output).

``max_tokens``, ``temperature``, ``top_p``, ``seed`` go in ``options`` (``num_predict``...).
``request.extra`` is merged into the body last (``think``, ``keep_alive``, ``options``...).
"""

from __future__ import annotations

import copy
from typing import Any

from sdk._backend import GenerationRequest
from sdk._errors import UnsupportedConstraint
from sdk._http.ollama._messages import ollama_messages

__all__ = ["check_ollama_request", "ollama_body"]


def check_ollama_request(request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for what ``/api/chat`` cannot be sent: a
    constraint other than JSON Schema (unless ``mode="none"``), a forced tool call."""
    if request.constraint is not None and request.mode != "none":
        kind = type(request.constraint).__name__
        raise UnsupportedConstraint(
            f"Ollama's /api/chat cannot be sent a {kind} (its format takes JSON Schema); pass "
            f"mode='none' to send nothing and have the client alone check the {kind}"
        )
    if request.mode == "tool" and request.tool_choice not in ("auto", "none"):
        raise UnsupportedConstraint(
            "Ollama cannot force a tool call (it has no tool_choice, and does not constrain a "
            "call's arguments): use mode='json_schema' (sent as format, which it applies), or "
            "tool_choice='auto'"
        )


def ollama_body(request: GenerationRequest, *, model: str | None) -> dict[str, Any]:
    """The JSON body of ``POST /api/chat`` for ``request`` (see the module docstring)."""
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = ollama_messages(request.messages)
    body["stream"] = True
    options = {
        key: value
        for key, value in (
            ("num_predict", request.max_tokens),
            ("temperature", request.temperature),
            ("top_p", request.top_p),
            ("seed", request.seed),
        )
        if value is not None
    }
    if options:
        body["options"] = options
    if request.constraint is None:
        if request.mode == "json_schema":
            body["format"] = copy.deepcopy(dict(request.schema))
        elif request.mode == "json_object":
            body["format"] = "json"
        elif request.mode == "tool" and request.tool_choice != "none":
            tools = request.tools or ()
            if tools:
                specs = [(t.name, t.compiled.schema_dict(), t.description) for t in tools]
            else:
                description = request.schema.get("description")
                specs = [
                    (
                        request.schema_name,
                        dict(request.schema),
                        description if isinstance(description, str) else None,
                    )
                ]
            body["tools"] = [_tool(*spec) for spec in specs]
    body.update(request.extra)
    return body


def _tool(name: str, schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = copy.deepcopy(schema)
    return {"type": "function", "function": function}
