"""Constraints beyond JSON Schema, as values: :class:`Choice`, :class:`Regex`, :class:`Grammar`,
:class:`StructuralTag` (of :class:`Tag` segments), and :class:`Tool` for several tools at once.

Each is a frozen dataclass, checked when it is built: a pattern that does not compile, a grammar
without its start rule, a tag whose begin no trigger starts, a duplicate choice raise
:class:`~sdk.SchemaError` at the call that made it, naming what is wrong. They are accepted as
the ``schema=`` of :meth:`sdk.Client.stream` and :func:`sdk.stream_structured`, beside pydantic
models and JSON Schema (tools as ``tools=``).

How each is sent, and what the client checks while the text streams, is said on each class
(and drawn in ``docs/architecture.md``); the local engine will compile them with xgrammar
(``compile_regex``, ``compile_grammar``, ``compile_structural_tag``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from sdk._errors import SchemaError
from sdk._regex._ecma import EcmaRegex, EcmaRegexError, PatternTooLarge, compile_ecma
from sdk._schema import CompiledSchema, compile_schema

__all__ = [
    "Choice",
    "Constraint",
    "Grammar",
    "GrammarSyntax",
    "Regex",
    "StructuralTag",
    "Tag",
    "TextConstraint",
    "Tool",
    "ToolChoice",
    "callable_tools",
    "chosen_tool",
    "tool_choice_of",
    "tools_of",
]

GrammarSyntax: TypeAlias = Literal["gbnf", "ebnf", "lark"]
ToolChoice: TypeAlias = Literal["auto", "none", "required"] | Mapping[str, Any]
"""``tool_choice`` as openai-python takes it: ``"auto"`` (text or calls, the model's choice),
``"none"`` (text only), ``"required"`` (one call or more), or one tool by name
(``{"type": "function", "function": {"name": ...}}``, or the Responses API's
``{"type": "function", "name": ...}``)."""

# A GBNF / xgrammar-EBNF rule definition: `name ::= ...` at the start of a line.
_GBNF_RULE = re.compile(r"^[ \t]*([A-Za-z][A-Za-z0-9_.-]*)[ \t]*::=", re.M)
# A Lark rule or terminal definition: `name:`, `?name:`, `NAME.2:`, `name[lazy]:`.
_LARK_RULE = re.compile(
    r"^[ \t]*[?!]?([A-Za-z_][A-Za-z0-9_-]*)(?:\.-?\d+)?(?:\[[^\]\n]*\])?[ \t]*:(?!:)", re.M
)
# OpenAI's rule for function names (the strictest of the servers').
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _set(obj: object, **values: Any) -> None:
    """Set the fields of a frozen dataclass from its own ``__init__`` (checked values)."""
    for name, value in values.items():
        object.__setattr__(obj, name, value)


def _constraint_name(kind: str, raw: object) -> str:
    if not isinstance(raw, str):
        raise TypeError(f"{kind} must be a str, not {type(raw).__name__}")
    return raw


@dataclass(frozen=True, slots=True)
class Choice:
    """The output is exactly one of ``choices`` (plain text, no quotes).

    Sent as vLLM ``structured_outputs.choice``, as a GBNF alternation to llama.cpp (and to
    SGLang as ``ebnf``), as a regex of the escaped choices to TGI and to OpenAI (a forced
    custom tool's grammar: ``docs/providers/openai.md``). The client
    rejects the output at the first character that no choice starts with; the result is the
    chosen string.
    """

    choices: tuple[str, ...]
    """The strings allowed (a list is accepted and kept as a tuple)."""

    def __init__(self, choices: Sequence[str]) -> None:
        if isinstance(choices, str) or not isinstance(choices, Sequence):
            raise TypeError(f"Choice takes a list of strings, not {type(choices).__name__}")
        values = tuple(choices)
        if not values:
            raise SchemaError("Choice needs at least one choice")
        seen: set[str] = set()
        for i, value in enumerate(values):
            if not isinstance(value, str) or not value:
                raise SchemaError(f"Choice: choices[{i}] must be a non-empty str, not {value!r}")
            if value in seen:
                raise SchemaError(f"Choice: {value!r} is listed twice")
            seen.add(value)
        _set(self, choices=values)


@dataclass(frozen=True, slots=True)
class Regex:
    """The whole output matches ``pattern`` (a full match, as vLLM and xgrammar apply it).

    The pattern is an ECMA-262 regular expression, as a JSON Schema ``pattern`` is: ``\\d``
    is ``[0-9]``, ``\\w`` ``[A-Za-z0-9_]``, ``.`` any character but a line terminator (see
    ``docs/patterns.md``). Sent as vLLM ``structured_outputs.regex``, SGLang's ``regex``, TGI's
    ``{"type": "regex"}`` format, OpenAI's custom-tool ``regex`` grammar, as an llguidance Lark
    grammar to llama.cpp (``%llguidance {}`` then ``start: /pattern/``), with ``\\d``, ``\\w``,
    ``\\s`` and ``.`` spelled as explicit classes so that every engine reads them alike. The
    client checks the text as it streams and rejects it at the first character after which no
    continuation can match (never earlier: a word boundary or a lookaround at the end of the
    text so far is left for the final check); the result is the text.

    Servers read the pattern with their own regex engine (Rust ``regex`` for llguidance,
    xgrammar's for vLLM): keep to the common subset (classes, groups, alternation,
    repetition, ``{m,n}``), without lookaround or backreferences. A pattern whose counted
    repetitions multiply past 100,000 elements (``(a{1000}){1000}``: see
    ``compile_schema``'s ``max_pattern_size``) is refused, a SchemaError, before any time is
    spent compiling it.
    """

    pattern: str
    """The regular expression (ECMA-262)."""
    compiled: EcmaRegex = field(init=False, repr=False, compare=False)
    """``pattern`` compiled with ECMA-262's meaning (what the client checks with)."""

    def __init__(self, pattern: str) -> None:
        pattern = _constraint_name("Regex pattern", pattern)
        try:
            compiled = compile_ecma(pattern)
        except PatternTooLarge as exc:
            raise SchemaError(
                f"Regex({pattern!r}) is too large to check: {exc}", keyword="pattern"
            ) from exc
        except EcmaRegexError as exc:
            raise SchemaError(
                f"Regex({pattern!r}) is not a valid regular expression: {exc}", keyword="pattern"
            ) from exc
        _set(self, pattern=pattern, compiled=compiled)


@dataclass(frozen=True, slots=True)
class Grammar:
    """The output follows a context-free grammar: GBNF (llama.cpp), EBNF (xgrammar's, which
    shares GBNF's ``name ::= ...`` syntax) or Lark (llguidance's dialect, regex terminals).

    ``syntax`` is detected when not given: rules written ``name ::= ...`` make it ``"gbnf"``,
    rules written ``name: ...`` (or a leading ``%llguidance``) make it ``"lark"``; a text
    with both or neither raises :class:`~sdk.SchemaError` asking for ``syntax=``. A GBNF/EBNF
    grammar must define ``root``, a Lark grammar ``start``.

    Sent as vLLM ``structured_outputs.grammar`` (vLLM tells Lark from EBNF itself), as
    llama.cpp's ``grammar`` (Lark behind ``%llguidance {}``), as SGLang's ``ebnf`` (GBNF/EBNF
    only), as OpenAI's custom-tool ``lark`` grammar (GBNF converted to Lark). The client
    cannot check a grammar itself: nothing is rejected early, the server's decoding is the
    guarantee, and the result is the text.
    """

    text: str
    """The grammar."""
    syntax: GrammarSyntax
    """``"gbnf"``, ``"ebnf"`` or ``"lark"``: as given, or as detected."""

    def __init__(self, text: str, syntax: GrammarSyntax | None = None) -> None:
        text = _constraint_name("Grammar text", text)
        if syntax is None:
            syntax = _detect_syntax(text)
        elif syntax not in ("gbnf", "ebnf", "lark"):
            raise ValueError(f"Grammar syntax must be 'gbnf', 'ebnf' or 'lark', not {syntax!r}")
        if syntax == "lark":
            names = {m.group(1) for m in _LARK_RULE.finditer(text)}
            if "start" not in names:
                raise SchemaError("Grammar (lark): there is no `start:` rule to begin with")
        elif "root" not in {m.group(1) for m in _GBNF_RULE.finditer(text)}:
            raise SchemaError(f"Grammar ({syntax}): there is no `root ::= ...` rule to begin with")
        _set(self, text=text, syntax=syntax)


def _detect_syntax(text: str) -> GrammarSyntax:
    gbnf = _GBNF_RULE.search(text) is not None
    lark = text.lstrip().startswith("%llguidance") or _LARK_RULE.search(text) is not None
    if gbnf and not lark:
        return "gbnf"
    if lark and not gbnf:
        return "lark"
    what = "both `name ::=` and `name:` rules" if gbnf else "no rule definitions"
    raise SchemaError(
        f"Grammar: cannot tell the syntax ({what}); say it: Grammar(text, syntax='gbnf'|'lark')"
    )


@dataclass(frozen=True, slots=True)
class Tag:
    """One kind of tagged segment of a :class:`StructuralTag`: ``begin``, then a JSON value that
    follows ``schema``, then ``end`` (e.g. ``<function=get_weather>{...}</function>``).

    ``schema`` is a pydantic model, a type or a JSON Schema dict (compiled here: an unusable
    one raises :class:`~sdk.SchemaError`). ``name`` labels the segment's events
    (``ev.tag``); by default the schema's name (a model's class name, a dict's ``title``),
    else ``begin``.
    """

    begin: str
    schema: Any
    end: str
    name: str = ""
    compiled: CompiledSchema = field(init=False, repr=False, compare=False)
    """The compiled schema each segment of this tag is tracked against."""

    def __init__(self, begin: str, schema: Any, end: str, name: str | None = None) -> None:
        begin = _constraint_name("Tag begin", begin)
        end = _constraint_name("Tag end", end)
        if not begin or not end:
            raise SchemaError(f"Tag: begin and end must not be empty (got {begin!r}, {end!r})")
        compiled = compile_schema(schema)
        if name is None:
            name = compiled.name if compiled.name != "response" else begin
        name = _constraint_name("Tag name", name)
        _set(self, begin=begin, schema=schema, end=end, name=name, compiled=compiled)


@dataclass(frozen=True, slots=True)
class StructuralTag:
    """Free text in which tagged segments follow their schemas (vLLM's and xgrammar's
    ``structural_tag``): once the output writes a ``trigger``, it must go on with the
    ``begin`` of a tag that trigger starts, that tag's JSON, and its ``end``; then free text
    again.

    ``triggers`` default to the tags' begins. Every begin must start with exactly one trigger.
    ``at_least_one``: the output starts with a segment (xgrammar's meaning: no free text before
    the first); ``stop_after_first``: the output ends with the first segment.

    The client follows the output: free text streams as :class:`~sdk.TextDelta` events, each
    segment's JSON goes through its own tracker (field events carry ``segment`` and ``tag``),
    is validated whole when it ends, and a begin that matches no tag, a missing end or text the
    options forbid is rejected at its first character. The result is a :class:`TaggedText`.
    """

    structures: tuple[Tag, ...]
    triggers: tuple[str, ...]
    at_least_one: bool = False
    stop_after_first: bool = False

    def __init__(
        self,
        structures: Sequence[Tag],
        triggers: Sequence[str] | None = None,
        *,
        at_least_one: bool = False,
        stop_after_first: bool = False,
    ) -> None:
        tags = tuple(structures)
        if not tags or not all(isinstance(t, Tag) for t in tags):
            raise SchemaError("StructuralTag needs a non-empty list of sdk.Tag structures")
        if triggers is None:
            triggers = tuple(dict.fromkeys(t.begin for t in tags))
        elif isinstance(triggers, str):
            raise TypeError("StructuralTag triggers must be a list of strings")
        trig = tuple(triggers)
        if not trig or not all(isinstance(t, str) and t for t in trig):
            raise SchemaError("StructuralTag: triggers must be non-empty strings")
        names: dict[str, str] = {}
        begins: set[str] = set()
        for tag in tags:
            matching = [t for t in trig if tag.begin.startswith(t)]
            if len(matching) != 1:
                raise SchemaError(
                    f"StructuralTag: the begin {tag.begin!r} must start with exactly one trigger, "
                    f"not {len(matching)} of {list(trig)!r}"
                )
            if tag.begin in begins:
                raise SchemaError(f"StructuralTag: two tags begin with {tag.begin!r}")
            if tag.name in names:
                raise SchemaError(
                    f"StructuralTag: two tags are named {tag.name!r}; give each a name="
                )
            begins.add(tag.begin)
            names[tag.name] = tag.begin
        for a in begins:
            for b in begins:
                if a != b and b.startswith(a):
                    raise SchemaError(
                        f"StructuralTag: the begin {a!r} is the start of {b!r}; the output "
                        "could not tell the two tags apart"
                    )
        for trigger in trig:
            if not any(t.begin.startswith(trigger) for t in tags):
                raise SchemaError(f"StructuralTag: the trigger {trigger!r} starts no tag's begin")
        for flag in (at_least_one, stop_after_first):
            if not isinstance(flag, bool):
                raise TypeError(f"StructuralTag flags must be True or False, not {flag!r}")
        _set(
            self,
            structures=tags,
            triggers=trig,
            at_least_one=at_least_one,
            stop_after_first=stop_after_first,
        )


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call: ``name`` (``[a-zA-Z0-9_-]``, at most 64 characters),
    ``schema`` for its arguments (a pydantic model, a type or a JSON Schema dict, compiled
    here), and a ``description`` (default: the schema's own, e.g. the model's docstring)."""

    name: str
    schema: Any
    description: str | None = None
    compiled: CompiledSchema = field(init=False, repr=False, compare=False)
    """The compiled schema each call's arguments are tracked against."""

    def __init__(self, name: str, schema: Any, description: str | None = None) -> None:
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"Tool name must match [a-zA-Z0-9_-]{{1,64}}, not {name!r}")
        compiled = compile_schema(schema)
        if description is None:
            own = compiled.schema_dict().get("description")
            description = own if isinstance(own, str) else None
        elif not isinstance(description, str):
            raise TypeError(f"Tool description must be a str, not {type(description).__name__}")
        _set(self, name=name, schema=schema, description=description, compiled=compiled)


TextConstraint: TypeAlias = Choice | Regex | Grammar
"""The constraints whose output is plain text."""
Constraint: TypeAlias = Choice | Regex | Grammar | StructuralTag
"""Every constraint that is not a JSON Schema."""


def tools_of(tools: Sequence[Tool] | Mapping[str, Any]) -> tuple[Tool, ...]:
    """``tools=`` as given (a list of :class:`Tool`, or a mapping of names to schemas),
    checked: at least one, each name once. Raises ``TypeError``/``ValueError`` naming the
    problem."""
    if isinstance(tools, Mapping):
        items = tuple(Tool(name, schema) for name, schema in tools.items())
    elif isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise TypeError(
            "tools must be a list of sdk.Tool or a mapping of names to schemas, "
            f"not {type(tools).__name__}"
        )
    else:
        items = tuple(tools)
        for i, tool in enumerate(items):
            if not isinstance(tool, Tool):
                raise TypeError(f"tools[{i}] must be a sdk.Tool, not {type(tool).__name__}")
    if not items:
        raise ValueError("tools must name at least one tool")
    names = [t.name for t in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"tools: each name must be given once; repeated: {', '.join(twice)}")
    return items


def tool_choice_of(choice: object, tools: tuple[Tool, ...]) -> ToolChoice:
    """``tool_choice=`` checked against ``tools``: ``"auto"``, ``"none"``, ``"required"``, or a
    named tool in Chat Completions' form (either API's form is accepted). Raises ``ValueError``
    naming the value, or the tool that is not offered."""
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return choice  # type: ignore[return-value]
        raise ValueError(
            "tool_choice must be 'auto', 'none', 'required' or "
            f"{{'type': 'function', 'function': {{'name': ...}}}}, not {choice!r}"
        )
    name: object = None
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
    if not isinstance(name, str):
        raise ValueError(
            "a named tool_choice is {'type': 'function', 'function': {'name': ...}} (or the "
            f"Responses API's {{'type': 'function', 'name': ...}}), not {choice!r}"
        )
    names = [t.name for t in tools]
    if name not in names:
        raise ValueError(
            f"tool_choice names {name!r}, which is not one of the tools ({', '.join(names)})"
        )
    return {"type": "function", "function": {"name": name}}


def chosen_tool(choice: ToolChoice | None) -> str | None:
    """The tool a named ``tool_choice`` (as :func:`tool_choice_of` returns it) names, else
    ``None``."""
    if isinstance(choice, Mapping):
        name = choice["function"]["name"]
        assert isinstance(name, str)
        return name
    return None


def callable_tools(tools: tuple[Tool, ...], choice: ToolChoice | None) -> tuple[Tool, ...]:
    """The tools a call may be of: the one a named ``choice`` names, else all of ``tools``."""
    name = chosen_tool(choice)
    return tools if name is None else tuple(t for t in tools if t.name == name)
