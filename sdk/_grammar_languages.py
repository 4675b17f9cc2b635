"""Constraints written in the grammar languages of the engines that apply them (sans-I/O):
GBNF and llguidance's Lark dialect for llama.cpp's server (a grammar that starts with
``%llguidance {}`` is read by llguidance), xgrammar's structural-tag format for vLLM and the
local engine.

- :func:`choice_gbnf`: ``root ::= "a" | "b"``.
- :func:`choice_regex`: ``(?:a|b)``, each choice's regex metacharacters escaped (TGI reads
  regexes only).
- :func:`regex_lark`: ``start: /pattern/`` (llguidance matches the whole output).
- :func:`grammar_text`: a :class:`~sdk.Grammar` as llama.cpp reads it (Lark behind
  ``%llguidance {}``).
- :func:`lark_text`: a :class:`~sdk.Grammar` as plain Lark (what OpenAI's custom tools read):
  an empty ``%llguidance {}`` header dropped, GBNF/EBNF converted by llguidance's converter
  (``sdk._local._llg_gbnf.gbnf_lark``; the ``local`` extra).
- :func:`xgrammar_structural_tag`: a :class:`~sdk.StructuralTag` in xgrammar's format
  (``{"type": "structural_tag", "format": {"type": "triggered_tags", ...}}``), what
  ``xgrammar.Grammar.from_structural_tag`` and ``GrammarCompiler.compile_structural_tag``
  read; :func:`legacy_structural_tag` the older ``structures``/``triggers`` form vLLM's two
  backends both read.
- :func:`structural_tag_lark`: a :class:`~sdk.StructuralTag` as llguidance's documented
  tool-calling pattern: free text is a lazy ``TEXT`` that stops at a trigger, each tag is the
  rest of its begin, an inline ``%json`` schema and its end. ``at_least_one`` and
  ``stop_after_first`` keep xgrammar's meaning (the output starts with a segment / ends with
  the first one), so the client's checks and the server's grammar agree.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sdk._constraints import Choice, Grammar, Regex, StructuralTag
from sdk._regex._ecma import portable

__all__ = [
    "choice_gbnf",
    "choice_regex",
    "grammar_text",
    "lark_regex_literal",
    "lark_text",
    "legacy_structural_tag",
    "quoted",
    "regex_lark",
    "structural_tag_lark",
    "xgrammar_structural_tag",
]

LLGUIDANCE = "%llguidance {}\n"


def quoted(text: str) -> str:
    """``text`` as a double-quoted literal that GBNF and llguidance's Lark both read: quotes,
    backslashes and control characters escaped (``\\n``, ``\\t``, ``\\u00XX``)."""
    out = ['"']
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def choice_gbnf(choice: Choice) -> str:
    """``root ::= "a" | "b" | ...``."""
    return "root ::= " + " | ".join(quoted(c) for c in choice.choices) + "\n"


_REGEX_SPECIAL = frozenset(".^$*+?()[]{}|\\")  # the operators all three share


def choice_regex(choice: Choice) -> str:
    """``(?:a|b|...)``: a regex that matches exactly one of the choices, each character a
    regex engine could read as an operator escaped with a backslash (``\\n``, ``\\r``,
    ``\\t`` for those controls), so Rust's ``regex``, Python's ``re`` and outlines'
    ``interegular`` read it alike."""
    alternatives = []
    for text in choice.choices:
        out = []
        for c in text:
            if c in _REGEX_SPECIAL:
                out.append("\\" + c)
            elif c == "\n":
                out.append("\\n")
            elif c == "\r":
                out.append("\\r")
            elif c == "\t":
                out.append("\\t")
            else:
                out.append(c)
        alternatives.append("".join(out))
    return "(?:" + "|".join(alternatives) + ")"


def lark_regex_literal(pattern: str) -> str:
    """``/pattern/`` with every unescaped ``/`` escaped (a Lark regex ends at one)."""
    out: list[str] = []
    escaped = False
    for c in pattern:
        if escaped:
            out.append(c)
            escaped = False
        elif c == "\\":
            out.append(c)
            escaped = True
        elif c == "/":
            out.append("\\/")
        elif c == "\n":
            out.append("\\n")
        else:
            out.append(c)
    return "/" + "".join(out) + "/"


def regex_lark(regex: Regex) -> str:
    """An llguidance grammar whose whole output matches ``regex``."""
    return f"{LLGUIDANCE}start: {lark_regex_literal(portable(regex.pattern))}\n"


def grammar_text(grammar: Grammar) -> str:
    """The grammar as llama.cpp's ``grammar`` field reads it: GBNF as it is (xgrammar's EBNF
    shares its syntax), Lark behind ``%llguidance {}``."""
    if grammar.syntax != "lark" or grammar.text.lstrip().startswith("%llguidance"):
        return grammar.text
    return LLGUIDANCE + grammar.text


_LLGUIDANCE_HEADER = re.compile(r"\A\s*%llguidance\s*\{\s*\}[ \t]*\r?\n?")


def lark_text(grammar: Grammar) -> str:
    """``grammar`` as plain Lark, without an empty ``%llguidance {}`` header; GBNF/EBNF is
    converted by llguidance's converter. Raises ``ImportError`` without llguidance (the
    ``local`` extra), ``ValueError`` for a grammar the converter cannot read."""
    text = grammar.text
    if grammar.syntax != "lark":
        from sdk._local._llg_gbnf import gbnf_lark  # llguidance's converter

        text = gbnf_lark(text)
    return _LLGUIDANCE_HEADER.sub("", text, count=1)


def structural_tag_lark(tag: StructuralTag) -> str:
    """An llguidance grammar for ``tag`` (see the module docstring)."""
    lines = [LLGUIDANCE.rstrip("\n"), "TEXT: /(.|\\n)*/"]
    trigger_rule = {}
    for j, trigger in enumerate(tag.triggers):
        trigger_rule[trigger] = f"trigger_{j}"
        lines.append(f"trigger_{j}[lazy]: TEXT {quoted(trigger)}")
    bare, after_text = [], []
    for i, t in enumerate(tag.structures):
        body = f"%json {json.dumps(t.compiled.schema_dict(), ensure_ascii=False)} {quoted(t.end)}"
        trigger = next(tr for tr in tag.triggers if t.begin.startswith(tr))
        rest = t.begin[len(trigger) :]
        lines.append(f"tag_{i}: {quoted(t.begin)} {body}")
        lines.append(
            f"text_tag_{i}: {trigger_rule[trigger]} {quoted(rest) + ' ' if rest else ''}{body}"
        )
        bare.append(f"tag_{i}")
        after_text.append(f"text_tag_{i}")
    first = " | ".join(bare)
    then = " | ".join(after_text)
    if tag.at_least_one and tag.stop_after_first:
        start = first
    elif tag.at_least_one:
        start = f"({first}) ({then})* TEXT"
    elif tag.stop_after_first:
        start = f"TEXT | {then}"
    else:
        start = f"({then})* TEXT"
    lines.insert(1, f"start: {start}")
    return "\n".join(lines) + "\n"


def legacy_structural_tag(tag: StructuralTag) -> dict[str, Any]:
    """``{"type": "structural_tag", "structures": [{"begin", "schema", "end"}], "triggers"}``:
    the form of vLLM's example, read by both its xgrammar and its guidance backends (it cannot
    say ``at_least_one`` or ``stop_after_first``)."""
    return {
        "type": "structural_tag",
        "structures": [
            {"begin": t.begin, "schema": t.compiled.schema_dict(), "end": t.end}
            for t in tag.structures
        ],
        "triggers": list(tag.triggers),
    }


def xgrammar_structural_tag(tag: StructuralTag) -> dict[str, Any]:
    """xgrammar's ``triggered_tags`` structural tag for ``tag``, options included."""
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": list(tag.triggers),
            "tags": [
                {
                    "type": "tag",
                    "begin": t.begin,
                    "content": {"type": "json_schema", "json_schema": t.compiled.schema_dict()},
                    "end": t.end,
                }
                for t in tag.structures
            ],
            "at_least_one": tag.at_least_one,
            "stop_after_first": tag.stop_after_first,
        },
    }
