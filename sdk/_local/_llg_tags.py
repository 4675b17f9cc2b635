"""xgrammar's structural tags (as parsed JSON) in llguidance's Lark: what the llama.cpp
runtime's masks decode a :class:`~sdk.StructuralTag` or a tools request under.

Each xgrammar format becomes a Lark expression:

=======================  ===============================================================
xgrammar format          Lark
=======================  ===============================================================
``const_string``         a string literal
``json_schema``          the caller's ``segment``: ``%json {schema}`` (strict, laid out),
                         or the schema's structure as rules (``bounded``: ``_llg_json``)
``regex``                ``/pattern/``
``grammar`` (EBNF)       a nested grammar ``@g`` (``_llg_gbnf.gbnf_lark``)
``sequence`` / ``or``    concatenation / alternation
``tag``                  ``"begin" content "end"``; ``any_text`` content is the lazy
                         shortest text up to ``end``
``tags_with_separator``  ``tag (separator tag)*``, optional unless ``at_least_one``; one
                         tag with ``stop_after_first``
``triggered_tags``       llguidance's tool-calling pattern: free text up to a trigger is
                         a lazy rule ending with the trigger, which the rest of a tag's
                         begin, its content and its end follow; the free text after the
                         last tag contains no trigger (xgrammar: a trigger starts a tag).
                         ``at_least_one``: the output starts with a tag;
                         ``stop_after_first``: it ends with the first
``any_text``             any text
=======================  ===============================================================

Anything else (another ``style`` of JSON, ``excludes``) raises ValueError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sdk._grammar_languages import lark_regex_literal, quoted
from sdk._local._llg_gbnf import gbnf_lark

__all__ = ["JsonSegment", "structural_tag_lark"]

_ANY = "/(?s:.*)/"


def _regex_escape(text: str) -> str:
    """``text`` as a regex matching it literally (ASCII punctuation as ``\\x{..}`` escapes)."""
    return "".join(c if c.isalnum() or ord(c) > 0x7F else f"\\x{{{ord(c):02x}}}" for c in text)


JsonSegment = Callable[[Any, str], tuple[str, list[str]]]
"""``(schema, prefix) -> (Lark expression, rules)``: a JSON Schema segment in the grammar."""


class _Builder:
    def __init__(self, segment: JsonSegment) -> None:
        self.segment = segment
        self.rules: list[str] = []
        self.grammars: list[dict[str, str]] = []
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def literal(self, text: str) -> str:
        return quoted(text) if text else ""

    def expr(self, fmt: Any) -> str:
        if not isinstance(fmt, dict):
            raise ValueError(f"a structural tag's format must be an object, not {fmt!r}")
        kind = fmt.get("type")
        if kind == "const_string":
            return self.literal(str(fmt["value"]))
        if kind == "json_schema":
            if fmt.get("style", "json") != "json":
                raise ValueError(f"a json_schema of style {fmt['style']!r} is not supported")
            expr, rules = self.segment(fmt["json_schema"], self.fresh("json"))
            self.rules.extend(r for r in rules if r not in self.rules)
            return expr
        if kind == "regex":
            return lark_regex_literal(str(fmt["pattern"]))
        if kind == "grammar":
            name = self.fresh("grammar")
            self.grammars.append({"name": name, "lark_grammar": gbnf_lark(str(fmt["grammar"]))})
            return "@" + name
        if kind == "any_text":
            self._no_excludes(fmt)
            return _ANY
        if kind in ("sequence", "or"):
            parts = [self.expr(e) for e in fmt["elements"]]
            parts = [p for p in parts if p]
            joiner = " " if kind == "sequence" else " | "
            return f"({joiner.join(parts)})" if parts else ""
        if kind == "tag":
            return self.tag(fmt)
        if kind == "tags_with_separator":
            return self.tags_with_separator(fmt)
        if kind == "triggered_tags":
            return self.triggered_tags(fmt)
        raise ValueError(f"the structural tag format {kind!r} is not supported")

    def _no_excludes(self, fmt: dict[str, Any]) -> None:
        if fmt.get("excludes"):
            raise ValueError("a structural tag's 'excludes' is not supported")

    def tag(self, fmt: dict[str, Any], *, begin: str | None = None) -> str:
        """``begin`` (default: the tag's own), its content and its end."""
        head = self.literal(fmt["begin"] if begin is None else begin)
        end = str(fmt["end"])
        content = fmt["content"]
        if isinstance(content, dict) and content.get("type") == "any_text":
            self._no_excludes(content)
            rule = self.fresh("text")
            self.rules.append(f"{rule}[lazy]: {_ANY} {self.literal(end)}".rstrip())
            body = rule
        else:
            body = " ".join(p for p in (self.expr(content), self.literal(end)) if p)
        return f"({' '.join(p for p in (head, body) if p)})"

    def tags_with_separator(self, fmt: dict[str, Any]) -> str:
        tags = "(" + " | ".join(self.tag(t) for t in fmt["tags"]) + ")"
        if fmt.get("stop_after_first"):
            out = tags
        else:
            out = f"{tags} ({self.literal(str(fmt['separator']))} {tags})*"
        return f"({out})" if fmt.get("at_least_one") else f"({out})?"

    def triggered_tags(self, fmt: dict[str, Any]) -> str:
        self._no_excludes(fmt)
        triggers = [str(t) for t in fmt["triggers"]]
        text = self.fresh("TEXT")
        self.rules.append(f"{text}: {_ANY}")
        trigger_rule: dict[str, str] = {}
        for trig in triggers:
            trigger_rule[trig] = self.fresh("trigger")
            self.rules.append(f"{trigger_rule[trig]}[lazy]: {text} {self.literal(trig)}")
        bare, after_text = [], []
        for t in fmt["tags"]:
            begin = str(t["begin"])
            trigger = next((tr for tr in triggers if begin.startswith(tr)), None)
            if trigger is None:
                raise ValueError(f"the tag {begin!r} starts with none of the triggers {triggers}")
            bare.append(self.tag(t))
            after_text.append(
                f"({trigger_rule[trigger]} {self.tag(t, begin=begin[len(trigger) :])})"
            )
        end = self.fresh("END")
        escaped = "|".join(_regex_escape(t) for t in triggers)
        self.rules.append(f"{end}: {_ANY} & ~/(?s:.*)({escaped})(?s:.*)/")
        first, then = " | ".join(bare), " | ".join(after_text)
        at_least_one, stop_after_first = fmt.get("at_least_one"), fmt.get("stop_after_first")
        if at_least_one and stop_after_first:
            return f"({first})"
        if at_least_one:
            return f"({first}) ({then})* {end}"
        if stop_after_first:
            return f"({end} | {then})"
        return f"({then})* {end}"


def structural_tag_lark(tag: Any, segment: JsonSegment) -> str:
    """The llguidance grammar of the xgrammar structural tag ``tag`` (parsed JSON): a Lark
    grammar, or llguidance's ``{"grammars": [...]}`` JSON when a segment is an EBNF grammar.
    ``segment`` writes each JSON Schema segment (strict, laid out)."""
    if not isinstance(tag, dict) or tag.get("type") != "structural_tag" or "format" not in tag:
        raise ValueError("a structural tag is an object {'type': 'structural_tag', 'format': ..}")
    builder = _Builder(segment)
    start = builder.expr(tag["format"]) or '""'
    lark = "\n".join([f"start: {start}", *builder.rules]) + "\n"
    if not builder.grammars:
        return lark
    return json.dumps({"grammars": [{"name": "start", "lark_grammar": lark}, *builder.grammars]})
