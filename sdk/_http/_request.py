"""The body of one Chat Completions request (sans-I/O): what an OpenAI-compatible server is sent.

:func:`chat_body` turns a :class:`~sdk._backend.GenerationRequest` into the JSON body of
``POST /chat/completions``; :func:`strict_schema` makes a JSON Schema acceptable to servers that
require ``"strict": true`` (OpenAI's structured outputs) without ever widening it.

How the schema travels, by ``request.mode``:

- ``"json_schema"``: ``response_format = {"type": "json_schema", "json_schema": {"name",
  "schema", "strict"}}`` (OpenAI, vLLM, SGLang, llama.cpp, Ollama).
- ``"json_object"``: ``response_format = {"type": "json_object", "schema": ...}``, the variant
  llama.cpp's server reads (OpenAI itself would only ask for *some* JSON object).
- ``"tool"``: one function tool whose ``parameters`` are the schema, forced by ``tool_choice``;
  the document streams as ``delta.tool_calls[i].function.arguments``.
- ``"none"``: no constraint is sent (a plain prompt, or a constraint given in ``extra``, such as
  vLLM's ``structured_outputs={"choice": [...]}`` / ``{"regex": ...}`` / ``{"grammar": ...}``).

Several tools (``request.tools``) and constraints other than JSON Schema
(``request.constraint``) are written per server flavour by :mod:`sdk._http._flavours`.

``request.extra`` is merged into the body last, at the top level, so it can add any parameter a
server understands and can replace any key built here (e.g. a hand-written ``response_format``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sdk._backend import GenerationRequest
from sdk._errors import StreamUsageError
from sdk._http._flavours import Server, special_fields
from sdk._schema import schema_name

__all__ = ["chat_body", "check_single_choice", "strict_schema"]

# Keywords whose values are schemas, or maps/lists of schemas: strict_schema walks into these.
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "not", "if", "then", "else", "contains", "additionalItems")


def strict_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """A copy of ``schema`` that servers demanding ``strict: true`` accept, and whether it is one.

    Strict mode requires every object schema to say ``additionalProperties: false`` and to list
    every property in ``required``. The rewrite only ever *narrows* the schema, so whatever the
    server's grammar lets through is still valid under the caller's schema:

    - an object schema with ``properties`` and no ``additionalProperties`` gets
      ``additionalProperties: false``;
    - properties that were optional become required (the model will always write them; a value
      it writes still has to satisfy that property's own schema).

    A free-form object (``{"type": "object"}`` without ``properties``), a map
    (``additionalProperties`` ``true`` or a schema) or ``patternProperties`` cannot be said
    strictly without changing what it means; then the schema is returned unchanged with
    ``False`` and the caller sends ``strict: false``. The input is never modified.
    """
    result = copy.deepcopy(dict(schema))
    ok = _make_strict(result)
    if not ok:
        return copy.deepcopy(dict(schema)), False
    return result, True


def _make_strict(node: Any) -> bool:
    """Rewrite ``node`` in place; False if some object cannot be made strict."""
    if not isinstance(node, dict):
        return True
    ok = True
    if _is_object_schema(node):
        extra = node.get("additionalProperties")
        props = node.get("properties")
        if extra is None and isinstance(props, dict) and not node.get("patternProperties"):
            node["additionalProperties"] = False
        elif extra is not False:
            # A free-form object ({"type": "object"}), a map (additionalProperties: schema) or
            # patternProperties: forbidding unlisted keys would change what the schema means.
            ok = False
        if isinstance(props, dict):
            required = list(node.get("required", []))
            required += [key for key in props if key not in required]
            node["required"] = required
    for key in _SCHEMA_MAPS:
        sub = node.get(key)
        if isinstance(sub, dict):
            for child in sub.values():
                ok = _make_strict(child) and ok
    for key in _SCHEMA_LISTS:
        sub = node.get(key)
        if isinstance(sub, list):
            for child in sub:
                ok = _make_strict(child) and ok
    for key in _SCHEMA_ONE:
        ok = _make_strict(node.get(key)) and ok
    return ok


def _is_object_schema(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        return True
    # {"properties": ...} without a type still describes objects.
    return kind is None and "properties" in node


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


def chat_body(
    request: GenerationRequest,
    *,
    model: str | None,
    strict: bool = True,
    include_usage: bool = True,
    server: Server | None = None,
) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for ``request`` (always ``stream: true``).

    ``model`` may be ``None`` for servers that serve one model and ignore the field (it is then
    left out). ``strict`` asks for strict structured outputs when the schema allows it (see
    :func:`strict_schema`). ``include_usage`` adds ``stream_options.include_usage`` so the last
    chunk reports token usage. Raises :class:`~sdk.StreamUsageError` for ``n > 1``.
    ``server`` is the flavour a constraint or several tools are written for
    (:mod:`sdk._http._flavours`).
    """
    check_single_choice(request.extra)
    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["messages"] = [dict(m) for m in request.messages]
    body["stream"] = True
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed

    name = schema_name(request.schema_name)
    if strict:
        schema, is_strict = strict_schema(request.schema)
    else:
        schema, is_strict = copy.deepcopy(dict(request.schema)), False
    if request.tools or request.constraint is not None:
        body.update(
            special_fields(
                request, api="chat", server=server, strict=strict_schema if strict else None
            )
        )
    elif request.mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": is_strict},
        }
    elif request.mode == "json_object":
        # llama.cpp reads a schema next to "json_object"; the plain form is not strict anyway,
        # so the caller's schema is sent as it is.
        body["response_format"] = {"type": "json_object", "schema": dict(request.schema)}
    elif request.mode == "tool":
        function: dict[str, Any] = {"name": name, "parameters": schema, "strict": is_strict}
        description = request.schema.get("description")
        if isinstance(description, str):
            function["description"] = description
        body["tools"] = [{"type": "function", "function": function}]
        body["tool_choice"] = {"type": "function", "function": {"name": name}}
    body.update(request.extra)
    return body
