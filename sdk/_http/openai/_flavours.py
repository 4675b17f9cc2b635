"""How each server flavour is sent what JSON Schema cannot say (sans-I/O): constraints, and
several tools.

A :class:`~sdk.Client` is told which server it talks to (``server=``): ``"vllm"``,
``"llamacpp"``, ``"sglang"``, ``"tgi"``, ``"openai"``, or ``None`` (not said: any
OpenAI-compatible server, JSON Schema only); :data:`TAKES` lists the constraints each takes.
:func:`check_request` refuses, before any request, what the flavour cannot express;
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

SGLang (Chat Completions; its documented fields, ``docs/advanced_features/structured_outputs``:
"Only one constraint parameter (``json_schema``, ``regex``, or ``ebnf``)") and TGI (Chat
Completions' ``response_format``, TGI's ``GrammarType``: ``{"type": "json" | "regex",
"value"}``; it applies no context-free grammar):

==================  =========================================  ==================================
constraint          SGLang                                     TGI
==================  =========================================  ==================================
``Choice``          ``{"ebnf": 'root ::= "a" | "b"'}``         ``response_format: {"type":
                                                               "regex", "value": "(?:a|b)"}``
``Regex``           ``{"regex": pattern}``                     ``response_format: {"type":
                                                               "regex", "value": pattern}``
``Grammar``         ``{"ebnf": text}`` (GBNF/EBNF; Lark        refused
                    refused: xgrammar, its default, reads
                    GBNF)
``StructuralTag``   ``response_format: {"type":                refused
                    "structural_tag", ...}`` (the forms
                    vLLM's is sent)
==================  =========================================  ==================================

A schema goes to TGI as ``response_format: {"type": "json", "value": schema}`` (the form its
docs give; every TGI since 1.4.3 reads it). Neither serves these on the Responses API here: a
constraint with ``api="responses"`` is refused.

OpenAI (``server="openai"``) applies a grammar itself, to the input of a custom tool: a
``Choice``, ``Regex`` or ``Grammar`` goes as one custom tool, forced, whose ``format`` is
``{"type": "grammar", "syntax": "regex" | "lark", "definition"}`` (:func:`custom_tool_fields`;
Chat Completions nests it as ``{"type": "custom", "custom": {"name", "format": {"type":
"grammar", "grammar": {"syntax", "definition"}}}}``), and the call's input is the constrained
text (the decoders read it as the output: :func:`custom_tool`). A ``Choice`` is a regex of its
escaped choices, a ``Regex`` its pattern with ``\\d``, ``\\w``, ``\\s``, ``.`` spelled out, a Lark
``Grammar`` its text (an empty ``%llguidance {}`` header dropped), a GBNF/EBNF one converted
to Lark by llguidance's converter (the ``local`` extra). A ``StructuralTag`` is refused.

A server not named takes JSON Schema only: a constraint raises
:class:`~sdk.UnsupportedConstraint`, unless ``mode="none"`` (nothing sent; the client checks).
vLLM's ``structural_tag`` is the JSON text of ``{"type": "structural_tag", "structures":
[{"begin", "schema", "end"}], "triggers": [...]}`` (the form both of vLLM's backends read), or,
when ``at_least_one`` / ``stop_after_first`` are asked for, xgrammar's ``triggered_tags``
format (read by vLLM's xgrammar backend only).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, get_args

from sdk._backend import GenerationRequest
from sdk._constraints import Choice, Constraint, Grammar, Regex, chosen_tool
from sdk._errors import UnsupportedConstraint
from sdk._grammar_languages import (
    choice_gbnf,
    choice_regex,
    grammar_text,
    lark_text,
    legacy_structural_tag,
    regex_lark,
    structural_tag_lark,
    xgrammar_structural_tag,
)
from sdk._http.openai._parameters import check_for
from sdk._http.openai._responses_input import responses_input
from sdk._http.openai._strict import strict_schema
from sdk._regex._ecma import portable
from sdk._schema import schema_name

__all__ = [
    "APIS",
    "DEFAULT_API",
    "SERVERS",
    "TAKES",
    "Api",
    "Server",
    "check_api",
    "check_request",
    "check_server",
    "constraint_fields",
    "custom_format",
    "custom_tool",
    "custom_tool_fields",
    "emulated_call",
    "function_tool",
    "is_openai",
    "json_object_format",
    "schema_format",
    "shows_schema",
    "special_fields",
    "tool_choice",
    "tool_fields",
]

Server: TypeAlias = Literal["openai", "vllm", "llamacpp", "sglang", "tgi"]
Api: TypeAlias = Literal["chat", "responses"]
SERVERS: tuple[Server, ...] = get_args(Server)
APIS: tuple[Api, ...] = get_args(Api)
DEFAULT_API: Api = APIS[0]
"""The API ``Client(...)`` speaks when ``api=`` is not given: Chat Completions."""

_ALL = frozenset({"Choice", "Regex", "Grammar", "StructuralTag"})
TAKES: Mapping[Server, frozenset[str]] = MappingProxyType(
    {
        "vllm": _ALL,
        "llamacpp": _ALL,
        "sglang": _ALL,  # a Grammar in GBNF/EBNF only
        "tgi": frozenset({"Choice", "Regex"}),  # regexes only: a Choice as one
        "openai": frozenset({"Choice", "Regex", "Grammar"}),  # as a custom tool's input
    }
)
"""The constraints (by class name) each named server is sent; anything else is refused before
any request (:func:`check_request`)."""
_CHAT_ONLY: frozenset[Server] = frozenset({"sglang", "tgi"})  # constraints on Chat Completions
_NAMES: Mapping[str, str] = MappingProxyType(
    {"vllm": "vLLM", "llamacpp": "llama.cpp", "sglang": "SGLang", "tgi": "TGI", "openai": "OpenAI"}
)


def check_server(server: object, api: object) -> None:
    """Check ``Client(server=..., api=...)`` at the call (``ValueError`` naming the value)."""
    if server is not None and server not in SERVERS:
        raise ValueError(
            f"server must be one of {', '.join(map(repr, SERVERS))} or None, not {server!r}"
        )
    check_api(api)


def check_api(api: object) -> None:
    """Check ``Client(api=...)`` (``ValueError`` naming the value)."""
    if api not in APIS:
        raise ValueError(f"api must be {' or '.join(map(repr, APIS))}, not {api!r}")


def check_request(request: GenerationRequest, *, server: Server | None, api: Api) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when ``server`` cannot be sent ``request``'s
    constraint (or ``seed`` on OpenAI's Responses API, which has none), and
    :class:`~sdk.StreamUsageError` when a message has no equivalent in the Responses API
    (:func:`sdk._http.openai._responses_input.responses_input`)."""
    check_for(request, api)
    if api == "responses":
        responses_input(request.messages)
    if api == "responses" and request.seed is not None and server in (None, "openai"):
        raise UnsupportedConstraint(
            "OpenAI's Responses API takes no seed; leave seed unset, or say server='vllm' / "
            "'llamacpp' if your server reads one"
        )
    constraint = request.constraint
    if constraint is None or request.mode == "none":
        return
    kind = type(constraint).__name__
    if server is not None and server in TAKES:
        _check_taken(constraint, server, api)
        return
    who = "OpenAI" if server == "openai" else "a server whose flavour is not known"
    raise UnsupportedConstraint(
        f"{who} cannot be sent a {kind} (it takes JSON Schema only). Say which server "
        "this is (Client(..., server='vllm' | 'llamacpp' | 'sglang' | 'tgi')), or pass "
        "mode='none' to send "
        f"nothing and have the client alone check the output against the {kind}"
    )


def _check_taken(constraint: Constraint, server: Server, api: Api) -> None:
    """Refuse what :data:`TAKES` (and the API) say ``server`` is not sent."""
    kind = type(constraint).__name__
    name = _NAMES[server]
    instead = f"or pass mode='none' to send nothing and have the client alone check the {kind}"
    if kind not in TAKES[server]:
        takes = ", ".join(sorted(TAKES[server]))
        raise UnsupportedConstraint(f"{name} cannot be sent a {kind} (it takes {takes}); {instead}")
    if server == "sglang" and isinstance(constraint, Grammar) and constraint.syntax == "lark":
        raise UnsupportedConstraint(
            "SGLang reads grammars as EBNF (GBNF, its default xgrammar backend's syntax), not "
            f"Lark; write the grammar in GBNF, {instead}"
        )
    if server == "openai" and isinstance(constraint, Grammar):
        try:
            lark_text(constraint)
        except ImportError as exc:
            raise UnsupportedConstraint(
                f"OpenAI reads grammars as Lark; a {constraint.syntax.upper()} grammar is "
                "converted by llguidance, which is not installed (pip install "
                f"'fieldstream[local]'): write the grammar in Lark, {instead}"
            ) from exc
        except ValueError as exc:
            raise UnsupportedConstraint(f"{exc}; write the grammar in Lark, {instead}") from exc
    if server in _CHAT_ONLY and api == "responses":
        raise UnsupportedConstraint(
            f"{name} is sent a {kind} on Chat Completions only; use api='chat', {instead}"
        )


def constraint_fields(constraint: Constraint, server: Server | None) -> dict[str, Any]:
    """The body fields that carry ``constraint`` to ``server`` (checked by
    :func:`check_request` first)."""
    if server == "vllm":
        return {"structured_outputs": _vllm(constraint)}
    if server == "llamacpp":
        return {"grammar": _llamacpp(constraint)}
    if server == "sglang":
        return _sglang(constraint)
    if server == "tgi" and isinstance(constraint, (Choice, Regex)):
        return {"response_format": {"type": "regex", "value": _regex_of(constraint)}}
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


def _regex_of(constraint: Choice | Regex) -> str:
    if isinstance(constraint, Choice):
        return choice_regex(constraint)
    return portable(constraint.pattern)


def _sglang(constraint: Constraint) -> dict[str, Any]:
    if isinstance(constraint, Choice):
        return {"ebnf": choice_gbnf(constraint)}
    if isinstance(constraint, Regex):
        return {"regex": portable(constraint.pattern)}
    if isinstance(constraint, Grammar):
        return {"ebnf": constraint.text}
    if constraint.at_least_one or constraint.stop_after_first:
        form = xgrammar_structural_tag(constraint)
    else:
        form = legacy_structural_tag(constraint)
    return {"response_format": form}


def schema_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """TGI's ``response_format`` for a JSON Schema (its ``GrammarType``: ``{"type": "json",
    "value": schema}``; it has no name or ``strict``)."""
    return {"type": "json", "value": copy.deepcopy(dict(schema))}


def _llamacpp(constraint: Constraint) -> str:
    if isinstance(constraint, Choice):
        return choice_gbnf(constraint)
    if isinstance(constraint, Regex):
        return regex_lark(constraint)
    if isinstance(constraint, Grammar):
        return grammar_text(constraint)
    return structural_tag_lark(constraint)


def tool_choice(
    request: GenerationRequest, *, api: Api, server: Server | None
) -> tuple[Any, str | None]:
    """The ``tool_choice`` field for ``request``'s tools (or its one schema sent as a tool,
    named ``schema_name``), and the one tool to send when only that one may be called.

    By default a call is forced: one tool by name, several ``"required"``. A named tool is
    written in each API's form (Chat Completions ``{"type": "function", "function": {"name"}}``,
    Responses ``{"type": "function", "name"}``), except to llama.cpp, whose server reads
    ``tool_choice`` as a string only (an object is taken as ``"auto"``): it is sent that tool
    alone with ``"required"`` (on Chat Completions such a call is asked for as the answer
    instead: :func:`emulated_call`).
    """
    choice = request.tool_choice
    if request.tools:
        name = chosen_tool(choice)
        if choice is None and len(request.tools) == 1:
            name = request.tools[0].name
        elif choice is None:
            return "required", None
    else:  # one schema sent as a forced tool (mode="tool")
        name = schema_name(request.schema_name)
    if name is None:
        return choice, None
    if server == "llamacpp":
        return "required", name
    if api == "responses":
        return {"type": "function", "name": name}, name
    return {"type": "function", "function": {"name": name}}, name


def emulated_call(request: GenerationRequest, *, api: Api, server: Server | None) -> str | None:
    """The tool whose call llama.cpp is asked to write as its whole answer, or ``None``.

    llama.cpp's server applies no grammar for ``tool_choice`` (its chat auto-parser reads a
    call out of the text only where the model's chat template knows tools, and forces none:
    a forced call was answered with prose, checked against the suite's server). So when
    exactly one tool must be called (``mode="tool"`` with one schema, a named choice, or one
    tool and no choice), it is sent no ``tools`` at all: the call's arguments schema goes as
    ``response_format`` (which llama.cpp enforces with its grammar), and the decoder reads the
    answer as that call's arguments (:class:`~sdk._http.openai._chat_decoder.EmulatedCallDecoder`).
    """
    if server != "llamacpp" or api != "chat" or request.mode != "tool":
        return None
    if request.tools and request.tool_choice in ("auto", "none", "required"):
        return None
    return tool_choice(request, api=api, server=server)[1]


_OPENAI_HOSTS = ("api.openai.com",)
_AZURE_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com")


def is_openai(server: Server | None, url: object) -> bool:
    """Whether the server is OpenAI's (or Azure OpenAI): ``server="openai"``, or no server
    said and ``url`` on OpenAI's or Azure OpenAI's host."""
    if server is not None:
        return server == "openai"
    if not isinstance(url, str) or "://" not in url:
        return False
    host = url.split("://", 1)[1].split("/", 1)[0].split("@")[-1].split(":")[0].lower()
    return host in _OPENAI_HOSTS or host.endswith(_AZURE_SUFFIXES)


def shows_schema(
    request: GenerationRequest, *, server: Server | None, api: Api, openai: bool
) -> bool:
    """Whether the server shows ``request.schema`` to the model itself (for ``show_schema=None``:
    :func:`sdk._backend.server_shows_schema`). A schema sent as a tool (``mode="tool"``) is a
    tool definition, which the server writes into the prompt (OpenAI; vLLM and SGLang through
    the chat template), except where llama.cpp is asked for the call as its answer
    (:func:`emulated_call`: ``response_format`` only). A ``response_format`` schema reaches the
    model on OpenAI's structured outputs (``openai``: :func:`is_openai`; the schema's tokens
    are counted in the prompt's), and is a grammar alone on every other server (vLLM, SGLang,
    llama.cpp, Ollama). ``json_object`` and ``none`` send no schema."""
    if request.mode == "tool":
        return emulated_call(request, api=api, server=server) is None
    if request.mode == "json_schema":
        return openai
    return False


def function_tool(
    name: str, schema: Mapping[str, Any], description: str | None, *, api: Api, strict: bool
) -> dict[str, Any]:
    """One function tool in ``api``'s form (Chat Completions nests it under ``function``).
    ``strict``: its schema made strict where it can be (:mod:`sdk._http.openai._strict`); a schema
    whose root is not an object (arguments are always one) is sent as it is, not strict."""
    sent = strict_schema(dict(schema)) if strict else None
    if sent is not None and not sent.wrapped:
        parameters, is_strict = sent.schema, sent.strict
    else:
        parameters, is_strict = copy.deepcopy(dict(schema)), False
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function.update(parameters=parameters, strict=is_strict)
    if api == "responses":
        return {"type": "function", **function}
    return {"type": "function", "function": function}


def tool_fields(
    request: GenerationRequest, *, api: Api, server: Server | None, strict: bool
) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` for ``request.tools`` (see :func:`tool_choice`)."""
    choice, only = tool_choice(request, api=api, server=server)
    tools = [t for t in request.tools if only is None or server != "llamacpp" or t.name == only]
    specs = [
        function_tool(t.name, t.compiled.schema_dict(), t.description, api=api, strict=strict)
        for t in tools
    ]
    return {"tools": specs, "tool_choice": choice}


def json_object_format(schema: Mapping[str, Any], server: Server | None) -> dict[str, Any]:
    """``response_format`` for ``mode="json_object"``: llama.cpp reads a ``schema`` beside
    ``"json_object"`` (its extension); OpenAI refuses one (``unknown_parameter``) and vLLM's
    ``ResponseFormat`` has no such field (dropped), so everyone else is sent the plain form
    (the client checks the schema either way). The plain form is not strict, so the caller's
    schema is sent as it is."""
    if server == "llamacpp":
        return {"type": "json_object", "schema": copy.deepcopy(dict(schema))}
    if server == "tgi":  # its GrammarType: a JSON Schema, here any object
        return schema_format({"type": "object"})
    return {"type": "json_object"}


def special_fields(
    request: GenerationRequest, *, api: Api, server: Server | None, strict: bool
) -> dict[str, Any]:
    """The body fields of a request with several tools or a constraint (empty under
    ``mode="none"``, which sends no constraint)."""
    if request.tools:
        return tool_fields(request, api=api, server=server, strict=strict)
    if request.constraint is None or request.mode == "none":
        return {}
    if server == "openai":
        return custom_tool_fields(request, api=api)
    return constraint_fields(request.constraint, server)


# --- OpenAI: a text constraint as a forced custom tool's grammar (issue 40, item 1) ---------


def custom_tool(request: GenerationRequest, server: Server | None) -> str | None:
    """The custom tool whose input is ``request``'s constrained text (its name), or ``None``:
    a ``Choice``, ``Regex`` or ``Grammar`` sent to OpenAI (see the module docstring)."""
    if server != "openai" or request.tools or request.mode == "none":
        return None
    if not isinstance(request.constraint, (Choice, Regex, Grammar)):
        return None
    return schema_name(request.schema_name)


def custom_format(constraint: Choice | Regex | Grammar) -> dict[str, str]:
    """``{"syntax", "definition"}`` of the grammar OpenAI applies to the custom tool's input."""
    if isinstance(constraint, Grammar):
        return {"syntax": "lark", "definition": lark_text(constraint)}
    return {"syntax": "regex", "definition": _regex_of(constraint)}


def custom_tool_fields(request: GenerationRequest, *, api: Api) -> dict[str, Any]:
    """``tools`` (one custom tool whose input follows the constraint) and ``tool_choice`` (that
    tool, forced) in ``api``'s form."""
    name = custom_tool(request, "openai")
    constraint = request.constraint
    if name is None or not isinstance(constraint, (Choice, Regex, Grammar)):
        raise UnsupportedConstraint(f"OpenAI cannot be sent a {type(constraint).__name__}")
    grammar = custom_format(constraint)
    description = "Write the answer as this tool's input; it must follow the grammar."
    if api == "responses":
        tool = {
            "type": "custom",
            "name": name,
            "description": description,
            "format": {"type": "grammar", **grammar},
        }
        return {"tools": [tool], "tool_choice": {"type": "custom", "name": name}}
    custom = {
        "name": name,
        "description": description,
        "format": {"type": "grammar", "grammar": grammar},
    }
    return {
        "tools": [{"type": "custom", "custom": custom}],
        "tool_choice": {"type": "custom", "custom": {"name": name}},
    }
