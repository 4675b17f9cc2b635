"""How each server flavour is sent what JSON Schema cannot say (sans-I/O): constraints, and
several tools.

A :class:`~sdk.Client` is told which server it talks to (``server=``): ``"vllm"``,
``"llamacpp"``, ``"openai"``, or ``None`` (not said: any OpenAI-compatible server, JSON Schema
only). :func:`check_request` refuses, before any request, what the flavour cannot express;
:func:`constraint_fields` builds the body fields that carry a constraint:

==================  =========================================  ==================================
constraint          vLLM (``structured_outputs``, Chat and     llama.cpp (``grammar``, Chat and
                    Responses)                                 Responses)
==================  =========================================  ==================================
``Choice``          ``{"choice": [...]}``                      GBNF ``root ::= "a" | "b"``
``Regex``           ``{"regex": pattern}``                     Lark ``start: /pattern/``
``Grammar``         ``{"grammar": text}``                      the text (Lark behind
                                                               ``%llguidance {}``)
``StructuralTag``   ``{"structural_tag": "<JSON text>"}``      Lark: lazy text, triggers, ``%json``
==================  =========================================  ==================================

OpenAI (and an unnamed server) take JSON Schema only: a constraint raises
:class:`~sdk.UnsupportedConstraint`, unless ``mode="none"`` (nothing sent; the client checks).
vLLM's ``structural_tag`` is the JSON text of ``{"type": "structural_tag", "structures":
[{"begin", "schema", "end"}], "triggers": [...]}`` (the form both of vLLM's backends read), or,
when ``at_least_one`` / ``stop_after_first`` are asked for, xgrammar's ``triggered_tags``
format (read by vLLM's xgrammar backend only).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Literal, TypeAlias

from sdk._backend import GenerationRequest
from sdk._constraints import Choice, Constraint, Grammar, Regex, Tool
from sdk._ecma_regex import portable
from sdk._errors import UnsupportedConstraint
from sdk._grammars import (
    choice_gbnf,
    grammar_text,
    legacy_structural_tag,
    regex_lark,
    structural_tag_lark,
    xgrammar_structural_tag,
)
from sdk._http._strict import strict_schema

__all__ = [
    "SERVERS",
    "Api",
    "Server",
    "check_request",
    "check_server",
    "constraint_fields",
    "special_fields",
    "tool_fields",
]

Server: TypeAlias = Literal["openai", "vllm", "llamacpp"]
Api: TypeAlias = Literal["chat", "responses"]
SERVERS = ("openai", "vllm", "llamacpp")
_APIS = ("chat", "responses")


def check_server(server: object, api: object) -> None:
    """Check ``Client(server=..., api=...)`` at the call (``ValueError`` naming the value)."""
    if server is not None and server not in SERVERS:
        raise ValueError(
            f"server must be one of {', '.join(map(repr, SERVERS))} or None, not {server!r}"
        )
    if api not in _APIS:
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")


def check_request(request: GenerationRequest, *, server: Server | None, api: Api) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when ``server`` cannot be sent ``request``'s
    constraint (or ``seed`` on OpenAI's Responses API, which has none)."""
    if api == "responses" and request.seed is not None and server in (None, "openai"):
        raise UnsupportedConstraint(
            "OpenAI's Responses API takes no seed; leave seed unset, or say server='vllm' / "
            "'llamacpp' if your server reads one"
        )
    constraint = request.constraint
    if constraint is None or request.mode == "none" or server in ("vllm", "llamacpp"):
        return
    kind = type(constraint).__name__
    who = "OpenAI" if server == "openai" else "a server whose flavour is not known"
    raise UnsupportedConstraint(
        f"{who} cannot be sent a {kind} (it takes JSON Schema only). Say which server "
        "this is (Client(..., server='vllm' | 'llamacpp')), or pass mode='none' to send "
        f"nothing and have the client alone check the output against the {kind}"
    )


def constraint_fields(constraint: Constraint, server: Server | None) -> dict[str, Any]:
    """The body fields that carry ``constraint`` to ``server`` (checked by
    :func:`check_request` first)."""
    if server == "vllm":
        return {"structured_outputs": _vllm(constraint)}
    if server == "llamacpp":
        return {"grammar": _llamacpp(constraint)}
    raise UnsupportedConstraint(f"no way to send a {type(constraint).__name__} to {server!r}")


def _vllm(constraint: Constraint) -> dict[str, Any]:
    if isinstance(constraint, Choice):
        return {"choice": list(constraint.choices)}
    if isinstance(constraint, Regex):
        return {"regex": portable(constraint.pattern)}
    if isinstance(constraint, Grammar):
        return {"grammar": constraint.text}
    if constraint.at_least_one or constraint.stop_after_first:
        form = xgrammar_structural_tag(constraint)
    else:
        form = legacy_structural_tag(constraint)
    return {"structural_tag": json.dumps(form, ensure_ascii=False)}


def _llamacpp(constraint: Constraint) -> str:
    if isinstance(constraint, Choice):
        return choice_gbnf(constraint)
    if isinstance(constraint, Regex):
        return regex_lark(constraint)
    if isinstance(constraint, Grammar):
        return grammar_text(constraint)
    return structural_tag_lark(constraint)


def tool_fields(tools: tuple[Tool, ...], *, api: Api, strict: bool) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` for several tools (one named tool is forced by name;
    several are ``"required"``: the model calls one or more). ``strict``: each tool's schema
    made strict where it can be (:mod:`sdk._http._strict`); a schema whose root is not an
    object (arguments are always one) is sent as it is, not strict."""
    specs = []
    for tool in tools:
        schema = tool.compiled.schema_dict()
        sent = strict_schema(schema) if strict else None
        if sent is not None and not sent.wrapped:
            schema, is_strict = sent.schema, sent.strict
        else:
            schema, is_strict = copy.deepcopy(schema), False
        function: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            function["description"] = tool.description
        function.update(parameters=schema, strict=is_strict)
        specs.append(
            {"type": "function", **function}
            if api == "responses"
            else {"type": "function", "function": function}
        )
    if len(tools) == 1:
        name = tools[0].name
        choice: Any = (
            {"type": "function", "name": name}
            if api == "responses"
            else {"type": "function", "function": {"name": name}}
        )
    else:
        choice = "required"
    return {"tools": specs, "tool_choice": choice}


def special_fields(
    request: GenerationRequest, *, api: Api, server: Server | None, strict: bool
) -> dict[str, Any]:
    """The body fields of a request with several tools or a constraint (empty under
    ``mode="none"``, which sends no constraint)."""
    if request.tools:
        return tool_fields(request.tools, api=api, strict=strict)
    if request.constraint is None or request.mode == "none":
        return {}
    return constraint_fields(request.constraint, server)
