"""What each :class:`~sdk._local._constrain.GrammarSpec` compiles to in llguidance, and the
llguidance twin of ``_constrain.check``. Needs no tokenizer and no torch.

==================  =====================================================================
spec kind           llguidance grammar
==================  =====================================================================
``json_schema``     under ``bounded``, the schema's structure as Lark (``_llg_json``)
                    where it knows it; else ``grammar_from_json_schema(strict(schema),
                    overrides=layout)``
``ebnf``            ``grammar_from_lark(gbnf_lark(text))`` (a Choice too; ``_llg_gbnf``:
                    llguidance's converter, ``\\u`` escapes made portable first)
``regex``           ``grammar_from_regex(pattern)``
``lark``            ``grammar_from_lark(text)``
``structural_tag``  a Lark grammar built from xgrammar's structural-tag JSON
                    (:func:`sdk._local._llg_tags.structural_tag_lark`), each JSON segment
                    as a JSON Schema above
==================  =====================================================================

*strict* is xgrammar's ``strict_mode`` (:func:`sdk._local._llg_strict.strict_schema`);
*layout* (:func:`layout_options`) is the backend's ``json_format`` in llguidance's JSON options
(see ``docs/local-engine.md`` for where they differ from xgrammar's).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sdk._backend import GenerationRequest
from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET
from sdk._errors import UnsupportedConstraint
from sdk._local._constrain import GrammarSpec, check_options, describe, spec_of
from sdk._local._deps import require
from sdk._local._layout import JsonFormat
from sdk._local._llg_gbnf import gbnf_lark
from sdk._local._llg_json import laid_out_lark
from sdk._local._llg_strict import strict_schema
from sdk._local._llg_tags import structural_tag_lark
from sdk._local._mask_budget import plan_wait, planned, remember_root
from sdk._local._mask_schema import Relaxation, fitted_strings, mask_schema, widened

__all__ = [
    "BOUNDED_GAP",
    "PROBE_LENGTH",
    "PROBE_VOCAB",
    "MaskPlan",
    "check_llg",
    "json_segment",
    "laid_out_schema",
    "layout_options",
    "lexer_stops",
    "llg_grammar",
    "plan_key",
    "plan_within",
    "schema_grammar",
    "schema_plan",
    "validation_error",
]

BOUNDED_GAP = "( |\\n\\n?[ \\t]{0,20})"
"""The ``bounded`` layout's gap as a regex (``_layout.BOUNDED_SPACE`` less its empty choice:
llguidance matches the whitespace pattern at most once per gap, or not at all)."""

_LAYOUTS: dict[str, dict[str, Any]] = {
    "bounded": {"whitespace_pattern": BOUNDED_GAP, "item_separator": ",", "key_separator": ":"},
    "spaced": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "},
    "compact": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"},
    "indented": {"whitespace_pattern": "\\n *", "item_separator": ",", "key_separator": ": "},
    "any": {"whitespace_pattern": "[ \\n\\r\\t]+", "item_separator": ",", "key_separator": ":"},
}
"""llguidance's JSON options (``x-guidance``) of each layout; separators are regexes."""

# xgrammar ignores the keywords it cannot enforce (uniqueItems, if/then, ...) and reads oneOf as
# anyOf; llguidance refuses both unless lenient. xgrammar takes any \\u escape in a string.
_COMMON = {"lenient": True, "json_allow_general_unicode_escapes": True}


def layout_options(json_format: JsonFormat) -> dict[str, Any]:
    """llguidance's JSON compile options (``x-guidance``) of ``json_format``."""
    return {**_LAYOUTS[json_format], **_COMMON}


def laid_out_schema(schema: Any, json_format: JsonFormat) -> dict[str, Any]:
    """``schema`` strict, with the layout's options as its ``x-guidance`` (what a ``%json``
    segment of a Lark grammar reads)."""
    out = strict_schema(schema)
    if not isinstance(out, dict):  # true/false schemas
        out = {} if out else {"not": {}}
    return {**out, "x-guidance": layout_options(json_format)}


_ANY_VALUE: dict[str, dict[str, Any]] = {
    "bounded": _LAYOUTS["bounded"],
    # xgrammar writes an untyped value inside indented JSON on one line: "," and ": ".
    "indented": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ": "},
}
"""The options of a value of any type inside a structure ``_llg_json`` writes."""


def _leaf_of(json_format: JsonFormat) -> Callable[[dict[str, Any], bool], dict[str, Any]]:
    """What ``%json`` reads for a value ``_llg_json`` leaves to llguidance's JSON compiler: a
    scalar (no whitespace in it), or any JSON value (laid out as xgrammar lays it out there)."""

    def leaf(node: dict[str, Any], scalar: bool) -> dict[str, Any]:
        options = _LAYOUTS["compact"] if scalar else _ANY_VALUE[json_format]
        return {**node, "x-guidance": {**options, **_COMMON}}

    return leaf


def _structure(schema: Any, json_format: JsonFormat, prefix: str) -> tuple[str, list[str]] | None:
    """The schema's structure written by ``_llg_json`` (``bounded``, ``indented``), or None."""
    if json_format not in _ANY_VALUE:
        return None
    return laid_out_lark(schema, json_format, _leaf_of(json_format), prefix)


def json_segment(schema: Any, json_format: JsonFormat, prefix: str) -> tuple[str, list[str]]:
    """A JSON Schema value inside a Lark grammar: its expression and the rules it needs. Under
    ``bounded`` and ``indented`` the structure is written as the xgrammar path lays it out
    where :mod:`sdk._local._llg_json` knows it; else ``%json`` with the layout's options."""
    schema = schema_plan(json.dumps(schema, separators=(",", ":")), json_format).masked
    written = _structure(strict_schema(schema), json_format, prefix)
    if written is not None:
        return written
    return "%json " + json.dumps(laid_out_schema(schema, json_format), ensure_ascii=False), []


def llg_grammar(spec: GrammarSpec, json_format: JsonFormat) -> str:
    """The llguidance grammar (what ``LLMatcher`` takes) of ``spec`` under ``json_format``;
    not validated (``LLMatcher.validate_grammar`` says what is wrong with it). Raises
    ValueError for a grammar llguidance's GBNF reader or the structural-tag translation
    refuses."""
    llg = require("llguidance")
    matcher = llg.LLMatcher
    if spec.kind == "json_schema":  # the plan the request's check started, joined
        plan = plan_within(spec.text, json_format, None)
        return (plan if plan is not None else schema_plan(spec.text, json_format)).grammar
    if spec.kind == "ebnf":
        return str(matcher.grammar_from_lark(gbnf_lark(spec.text)))
    if spec.kind == "regex":
        return str(matcher.grammar_from_regex(spec.text))
    if spec.kind == "lark":
        return str(matcher.grammar_from_lark(spec.text))
    lark = structural_tag_lark(
        json.loads(spec.text), lambda s, prefix: json_segment(s, json_format, prefix)
    )
    return lark if lark.startswith("{") else str(matcher.grammar_from_lark(lark))


def schema_grammar(schema: Any, json_format: JsonFormat) -> str:
    """The llguidance grammar of a (mask) schema: strict, its structure written by
    ``_llg_json`` where it knows it, else llguidance's JSON compiler."""
    matcher = require("llguidance").LLMatcher
    schema = strict_schema(schema)
    if not isinstance(schema, dict):
        schema = {} if schema else {"not": {}}
    written = _structure(schema, json_format, "j")
    if written is not None:
        expr, rules = written
        return str(matcher.grammar_from_lark("\n".join([f"start: {expr}", *rules])))
    return str(matcher.grammar_from_json_schema(schema, overrides=layout_options(json_format)))


@dataclass(frozen=True, slots=True)
class MaskPlan:
    """What the llama.cpp runtime masks for a JSON Schema: the ``grammar``, the schema it was
    compiled from (``masked``: the caller's, relaxed), each :class:`Relaxation`, and
    llguidance's reason for refusing the caller's schema as it was ("" when it took it)."""

    grammar: str
    masked: Any
    relaxations: tuple[Relaxation, ...]
    refused: str


def _failure(exc: Exception) -> str:
    """Why a translation failed, as a refusal's reason: a ``ValueError``'s own message, else
    ``"malformed (...)"`` (a malformed schema fails anywhere, with any error)."""
    return str(exc) if isinstance(exc, ValueError) else f"malformed ({exc!r})"


def _refusal(json_format: JsonFormat, built: dict[int, str]) -> Callable[[Any], str]:
    """llguidance's reason it refuses a schema ("" when it takes it); the grammar of the
    last schema it took is kept in ``built`` (by the schema's id), so the plan builds it once."""

    def refusal(schema: Any) -> str:
        try:
            grammar = schema_grammar(schema, json_format)
            reason = validation_error(grammar)
        except Exception as exc:  # a malformed schema may fail anywhere in the translation
            return _failure(exc)
        if not reason:
            built.clear()
            built[id(schema)] = grammar
        return reason

    return refusal


PROBE_VOCAB = 4096
"""Tokens of the vocabulary the lexer probe masks with (:func:`lexer_stops`): the 256 bytes,
then seeded pseudo-words of 2 to 12 characters. Enough to reproduce the lexer's stop on the
corpus's pattern (it stops there with 1,000 as with the packaged model's 49,152)."""

PROBE_LENGTH = 24
"""How many bytes of a string the lexer probe writes (:func:`lexer_stops`): the lexer builds a
pattern's states as the text comes, so it may run out of them after the string's first bytes
(``^[0-9]{3}(?:\\S+\\s+){0,99}\\S+$`` at its fourth)."""

_PROBE_PICKS = (b"a0x-._/:A", b" \t\n")
"""The bytes the probe prefers within a string: a word's, then (every third byte) a gap's;
where the pattern takes none of them, the lowest byte it takes."""


@functools.cache
def _probe_tokenizer() -> Any:
    """A synthetic llguidance tokenizer of :data:`PROBE_VOCAB` tokens, token ``b`` the byte
    ``b`` (no model needed: the probe runs when the request is checked, before any load)."""
    import random

    llg = require("llguidance")
    rnd = random.Random(42)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n\t.,:;-_/\"'()[]{}"
    tokens = [bytes([b]) for b in range(256)]
    seen = set(tokens)
    while len(tokens) < PROBE_VOCAB - 1:
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(2, 12))).encode()
        if rnd.random() < 0.5:
            word = b" " + word[1:]
        if word not in seen:
            seen.add(word)
            tokens.append(word)
    tokens.append(b"<|probe-eos|>")

    class _Vocab:
        eos_token_id = len(tokens) - 1
        bos_token_id = None

        def __init__(self) -> None:
            self.tokens = tokens
            self.special_token_ids = [len(tokens) - 1]

        def __call__(self, text: bytes | str) -> list[int]:
            return list(text.encode() if isinstance(text, str) else text)

    return llg.LLTokenizer(llg.TokenizerWrapper(_Vocab()))


def _stopped(matcher: Any) -> str:
    """The lexer's reason ``matcher`` (just masked) is in its error state, "" when it is not."""
    if not matcher.is_error():
        return ""
    lines = str(matcher.get_error()).strip().splitlines()  # its reason, then a dump
    return lines[0].removeprefix("lexer error: ") if lines else "the lexer stopped"


@functools.lru_cache(maxsize=1024)
def _lexer_stop(text: str) -> str:
    llg = require("llguidance")
    grammar = schema_grammar(json.loads(text), "compact")
    if validation_error(grammar):
        return ""  # refused outright: widened() relaxes it, with llguidance's reason
    matcher = llg.LLMatcher(_probe_tokenizer(), grammar, log_level=0)
    matcher.compute_logit_bias()
    if reason := _stopped(matcher):
        return reason
    if matcher.validate_tokens([ord('"')]) != 1:
        return ""
    matcher.consume_token(ord('"'))
    for step in range(PROBE_LENGTH):  # a walk through text the pattern takes, masked each byte
        bias = matcher.compute_logit_bias()
        if reason := _stopped(matcher):
            return reason
        taken = [b for b in range(256) if bias[b] and b not in b'"\\']
        if not taken:
            return ""  # the string may only end here: nothing further to probe
        picks = _PROBE_PICKS[1] if step % 3 == 2 else _PROBE_PICKS[0]
        byte = next((b for b in picks if b in taken), taken[0])
        matcher.consume_token(byte)
    matcher.compute_logit_bias()
    return _stopped(matcher)


def lexer_stops(schema: dict[str, Any]) -> str:
    """llguidance's reason its lexer stops in a string of ``schema`` (a string schema: its
    ``pattern`` and lengths), "" when it runs: the grammar compiles, yet the lexer may run out
    of states at the string's first token or a later one (``too many expressions
    constructed``: a ``BackendError`` mid-generation). Found by a walk of
    :data:`PROBE_LENGTH` bytes through text the pattern takes, masked at every byte with
    :data:`PROBE_VOCAB` synthetic tokens (cached by the schema)."""
    return _lexer_stop(json.dumps(schema, separators=(",", ":"), sort_keys=True))


@functools.lru_cache(maxsize=64)
def schema_plan(text: str, json_format: JsonFormat) -> MaskPlan:
    """The mask of the JSON Schema ``text`` on llguidance (cached: the request's check and
    its compile share it): the caller's schema never narrowed (``_mask_schema.mask_schema``),
    each string whose pattern would stop llguidance's lexer relaxed (:func:`lexer_stops`,
    ``_mask_schema.fitted_strings``) and, where llguidance still refuses it, widened until it
    compiles (``_mask_schema.widened``)."""
    schema, notes = mask_schema(json.loads(text))
    schema, fitted = fitted_strings(schema, lexer_stops)
    built: dict[int, str] = {}
    masked, widenings, refused = widened(schema, _refusal(json_format, built))
    grammar = built.get(id(masked))  # validated as widened() ended: not built again
    if grammar is None:
        grammar = schema_grammar(masked, json_format)
    return MaskPlan(grammar, masked, (*notes, *fitted, *widenings), refused)


def plan_within(text: str, json_format: JsonFormat, seconds: float | None) -> MaskPlan | None:
    """:func:`schema_plan` of ``text`` if it is ready within ``seconds`` (None: as long as it
    takes), else None: it goes on in a thread of its own and is kept, and the next ask (the
    compile's) joins it (``_mask_budget.planned``)."""
    return planned(plan_key(text, json_format), lambda: schema_plan(text, json_format), seconds)


def plan_key(text: str, json_format: JsonFormat) -> tuple[str, str, str]:
    """The key :func:`plan_within` keeps the plan of ``text`` under (``_mask_budget``)."""
    return ("llg", text, json_format)


def validation_error(grammar: str, tokenizer: Any = None) -> str:
    """llguidance's reason ``grammar`` cannot be used ("" when it can)."""
    llg = require("llguidance")
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, tokenizer)
    return str(messages[0]).strip() if is_error and messages else ""


def check_llg(
    request: GenerationRequest,
    json_format: JsonFormat = "bounded",
    tokenizer: Any = None,
    budget: float | None = DEFAULT_MASK_COMPILE_BUDGET,
) -> None:
    """Raise :class:`~sdk.UnsupportedConstraint` when the local engine's llguidance masks cannot
    constrain ``request``, with llguidance's reason: the twin of ``_constrain.check`` for the
    llama.cpp runtime. The request's options are checked as ``_constrain.check`` checks them;
    then the request's grammar is built and validated, JSON Schemas included (llguidance
    refuses some that xgrammar takes, and takes some it refuses). ``tokenizer`` (the loaded
    model's ``llguidance.LLTokenizer``) validates the special tokens a grammar names too
    (``<|name|>`` in Lark); without it (no model loaded yet) an unknown one is refused at the
    first generation. Any failure of the translation (a malformed schema) is refused as well.
    A JSON Schema's plan is waited for at most ``budget`` seconds (:func:`plan_within`; None:
    no limit; a small schema's always, ``_mask_budget.plan_wait``): past it the check returns
    and the plan goes on for the compile to join (a translation that fails later fails the
    compile, and the next check).
    Without llguidance installed nothing is compiled: the first generation raises
    :class:`~sdk.MissingDependencyError`."""
    check_options(request)
    spec = spec_of(request)
    if spec is None:
        return
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return
    cannot = f"the local engine (llguidance) cannot compile {describe(request)}"
    try:
        if spec.kind == "json_schema":
            # Never refused: widened until llguidance takes it, validated as the plan was made
            # (a schema's grammar names no special token for the tokenizer to check); but a
            # malformed schema, whose translation fails, is not a schema to widen.
            remember_root(spec.text, request.schema)  # a fallback needs not parse it again
            plan_within(spec.text, json_format, plan_wait(spec.text, budget))
            return
        reason = validation_error(llg_grammar(spec, json_format), tokenizer)
    except Exception as exc:  # a malformed schema may fail anywhere in the translation
        raise UnsupportedConstraint(f"{cannot}: {_failure(exc)}") from exc
    if reason:
        raise UnsupportedConstraint(f"{cannot}: {reason}")
