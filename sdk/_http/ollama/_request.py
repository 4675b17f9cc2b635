"""The body of one ``POST /api/chat`` request to Ollama (sans-I/O).

How the schema travels, by ``request.mode``:

- ``"json_schema"``: ``format: <the schema>``, as given: Ollama turns it into a grammar (with
  llama.cpp's JSON-Schema-to-grammar converter, which ignores what it does not know); the
  answer is the message's ``content``, and fieldstream checks the whole schema.
- ``"json_object"``: ``format: "json"`` (some JSON value; fieldstream checks the schema).
- ``"tool"`` with ``tool_choice="auto"``: ``tools``, each a function with its schema as
  ``parameters``; the model decides whether to call (Ollama does not constrain a call's
  arguments; fieldstream checks them). ``tool_choice="none"`` sends no tools.
- ``"tool"`` forcing exactly one tool's call (the one schema sent as a tool; a ``tool_choice``
  naming a tool; one tool with ``"required"`` or no choice): Ollama has no ``tool_choice``, so
  the call is asked for as the answer (:func:`forced_call`): no ``tools``, ``format: <that
  tool's arguments schema>`` (which Ollama applies, as for ``"json_schema"``), and the
  decoder reads the answer's ``content`` as that call's arguments
  (:class:`~sdk._http.ollama._decoder.OllamaDecoder`), as for llama.cpp's OpenAI-compatible
  server (:func:`sdk._http.openai._flavours.emulated_call`). A forced choice among several
  tools cannot be one ``format`` and is refused before sending (:func:`check_ollama_request`).
- ``"none"``: nothing (fieldstream checks the output).

``max_tokens`` (or ``max_completion_tokens``), ``temperature``, ``top_p``, ``seed``, ``stop``,
``frequency_penalty``, ``presence_penalty`` go in ``options`` (``num_predict``...);
``logprobs`` and ``top_logprobs`` at the top; ``reasoning_effort`` is ``think`` (``"none"``:
``false``; ``"low"``, ``"medium"``, ``"high"`` as they are); ``stream_options`` sends nothing
(the usage always comes); any other named parameter is refused before sending.
``request.extra`` is merged into the body last (``think``, ``keep_alive``, ``options``...); the
cures a retry asks for (``request.cures``) after it (:mod:`sdk._http.ollama._cures`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sdk._backend import GenerationRequest
from sdk._constraints import chosen_tool
from sdk._errors import UnsupportedConstraint
from sdk._http._cures import OLLAMA_PENALTY, apply_cures
from sdk._http._request_checks import (
    calls_forced,
    refuse_constraint,
    refuse_effort,
    refuse_parameters,
)
from sdk._http.ollama._cures import apply_reasoning_cures
from sdk._http.ollama._messages import ollama_messages
from sdk._schema import schema_name

__all__ = ["check_ollama_request", "forced_call", "ollama_body"]

_OPTIONS = ("stop", "frequency_penalty", "presence_penalty")
_TOP = ("logprobs", "top_logprobs")
_PARAMETERS = frozenset(
    {"max_completion_tokens", "reasoning_effort", "stream_options", *_OPTIONS, *_TOP}
)
_THINK = {"none": False, "low": "low", "medium": "medium", "high": "high"}


def check_ollama_request(request: GenerationRequest) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` for what ``/api/chat`` cannot be sent: a
    constraint other than JSON Schema (unless ``mode="none"``), a named parameter it has no
    equivalent for, a forced call of one of several tools (:func:`forced_call`)."""
    refuse_constraint(request, "Ollama's /api/chat", "its format takes JSON Schema")
    refuse_parameters(request, _PARAMETERS, "Ollama's /api/chat", "Ollama's own field in extra=")
    refuse_effort(request, _THINK, "Ollama's think")
    if calls_forced(request) and forced_call(request) is None:
        names = ", ".join(repr(t.name) for t in request.tools)
        raise UnsupportedConstraint(
            f"Ollama cannot force a call of one of several tools ({names}): it has no "
            "tool_choice, and a forced call is sent as the answer's format, which holds one "
            "tool's arguments schema. Name the tool to call (tool_choice={'type': 'function', "
            "'function': {'name': ...}}), or pass tool_choice='auto' to let the model choose"
        )


def forced_call(request: GenerationRequest) -> str | None:
    """The one tool whose call Ollama is asked to write as its whole answer, or ``None``.

    Ollama's ``/api/chat`` has no ``tool_choice``, but applies ``format``. So when exactly one
    tool must be called (``mode="tool"`` with the one schema, a ``tool_choice`` naming a tool,
    or one tool with ``"required"`` or no choice) that tool's arguments schema is sent as
    ``format`` and no ``tools``, and the answer is read as the call. ``None`` for anything else,
    ``"required"`` (or no choice) among several tools included (refused by
    :func:`check_ollama_request`).
    """
    if not calls_forced(request):
        return None
    if not request.tools:
        return schema_name(request.schema_name)
    named = chosen_tool(request.tool_choice)
    if named is not None:
        return named
    return request.tools[0].name if len(request.tools) == 1 else None


def ollama_body(request: GenerationRequest, *, model: str | None) -> dict[str, Any]:
    """The JSON body of ``POST /api/chat`` for ``request`` (see the module docstring)."""
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = ollama_messages(request.messages)
    body["stream"] = True
    given = request.parameters
    limit = request.max_tokens
    if limit is None:
        limit = given.get("max_completion_tokens")
    options: dict[str, Any] = {
        key: value
        for key, value in (
            ("num_predict", limit),
            ("temperature", request.temperature),
            ("top_p", request.top_p),
            ("seed", request.seed),
            *((name, given.get(name)) for name in _OPTIONS),
        )
        if value is not None
    }
    if isinstance(options.get("stop"), str):
        options["stop"] = [options["stop"]]
    elif "stop" in options:
        options["stop"] = list(options["stop"])
    if options:
        body["options"] = options
    body.update({name: given[name] for name in _TOP if name in given})
    if given.get("reasoning_effort") is not None:
        body["think"] = _THINK[given["reasoning_effort"]]
    call = forced_call(request)
    if call is not None:  # Ollama forces no call: the arguments are the answer
        tool = next((t for t in request.tools if t.name == call), None)
        body["format"] = _format(tool.compiled.schema_dict() if tool else request.schema)
    elif request.constraint is None:
        if request.mode == "json_schema":
            body["format"] = _format(request.schema)
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
    apply_reasoning_cures(body, request)  # what a retry asks for (sdk/_http/ollama/_cures.py)
    apply_cures(body, request, penalty=OLLAMA_PENALTY)  # a retry's fixes (sdk._http._cures)
    return body


def _format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``format``: the schema as given (Ollama turns it into a grammar)."""
    return copy.deepcopy(dict(schema))


def _tool(name: str, schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = copy.deepcopy(schema)
    return {"type": "function", "function": function}
