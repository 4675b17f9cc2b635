"""JSON layouts as grammar text: where the local engine lets the model put whitespace.

:data:`JsonFormat` names the layouts; :func:`schema_ebnf` is a JSON Schema's grammar under one
(xgrammar's EBNF), :func:`laid_out` a structural tag whose JSON segments follow one. Needs
xgrammar (imported on first use), not a tokenizer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from sdk._local._xgr_schema import loosened, xgr_grammar

__all__ = [
    "BOUNDED_SPACE",
    "JSON_FORMATS",
    "JsonFormat",
    "bounded_ebnf",
    "escaped_strings",
    "laid_out",
    "layout_options",
    "schema_ebnf",
]

JsonFormat = Literal["bounded", "spaced", "compact", "indented", "any"]
"""How the grammar lets the model lay out JSON (whitespace between JSON tokens):

- ``"bounded"`` (the default): the model's own whitespace where pretty-printers put it (after
  ``{``, ``[``, ``,`` and ``:``, before ``}`` and ``]``; none before ``,`` or ``:``), each gap
  bounded as llama.cpp's JSON-schema grammars bound it: empty, one space, or one or two
  newlines followed by up to 20 spaces or tabs (:data:`BOUNDED_SPACE`);
- ``"spaced"``: ``json.dumps``'s separators, ``{"a": 1, "b": [2]}``, on one line;
- ``"compact"``: no whitespace at all, ``{"a":1,"b":[2]}``;
- ``"indented"``: ``json.dumps(indent=2)``, one member or item per line;
- ``"any"``: any whitespace, unbounded.

Spaced, compact and indented force every whitespace character (jump-forward drafts it); bounded
and any leave it to the model. Why bounded is the default: a small model writes JSON the way it
saw it in training, indented, and its answers suffer when the grammar makes it write otherwise:
SmolLM2 under the compact grammar closes arrays at once (``{"tags":[]}`` for "list eight
tags"), under spaced separators often too, and under a forced indentation it can run away in a
string; with the whitespace its own it fills arrays and fields as llama.cpp's server does with
the same model. The bounds matter: with any whitespace (or xgrammar's ``max_whitespace_cnt``,
which bounds characters, not newlines) it writes newline after newline, and with whitespace
allowed before commas too (llama.cpp allows it) it writes ``"a": 1\n\n,\n\n"b"``. The figures
are in the README (``tests/benchmarks/bench_layout.py``).
"""

JSON_FORMATS: tuple[JsonFormat, ...] = ("bounded", "spaced", "compact", "indented", "any")
"""Every layout, the default first."""

BOUNDED_SPACE = '"" | " " | "\\n" "\\n"? [ \\t]{0,20}'
"""The EBNF of one whitespace gap under the ``"bounded"`` layout (llama.cpp's ``space`` rule)."""

_ANY_SPACE = "[ \\n\\r\\t]*"
"""How xgrammar's JSON-schema EBNF spells a gap of any whitespace (replaced for ``bounded``)."""

_LAYOUTS: dict[str, dict[str, Any]] = {
    "spaced": {"any_whitespace": False, "separators": (", ", ": ")},
    "compact": {"any_whitespace": False, "separators": (",", ":")},
    "indented": {"any_whitespace": False, "indent": 2, "separators": (",", ": ")},
    "any": {"any_whitespace": True},
}
"""xgrammar's JSON-schema options of each layout but ``bounded`` (see :func:`layout_options`)."""

_BOUNDED_FALLBACK = 22
"""Whitespace characters per gap for ``bounded`` if xgrammar's EBNF ever changes its spelling
of a gap (``max_whitespace_cnt``: bounds the characters, not the newlines)."""


def layout_options(json_format: JsonFormat) -> dict[str, Any]:
    """xgrammar's JSON-schema options of ``json_format`` (for ``bounded``, the fallback that
    bounds characters: see :func:`bounded_ebnf`)."""
    if json_format == "bounded":
        return {"any_whitespace": True, "max_whitespace_cnt": _BOUNDED_FALLBACK}
    return _LAYOUTS[json_format]


# xgrammar's rule for one character of a string with minLength/maxLength, counted
# ``name{m, n}``: no escape sequence at all (``"a\"b"`` refused), raw control characters but
# CR and LF allowed (invalid JSON).
_BOUNDED_CHARACTER = re.compile(r'^(\w+) ::= \(\(\[\^\\"\\\\\\r\\n\]\)\)$', re.MULTILINE)
_JSON_CHARACTER = r'(([^\0-\x1f\"\\]) | ("\\" basic_escape))'
"""One character of a JSON string, an escape sequence included (``basic_escape``: xgrammar's
own rule for what follows a backslash, in every grammar it builds of a schema)."""


def escaped_strings(ebnf: str) -> str:
    r"""xgrammar's EBNF of a schema with each length-bounded string's character taking escape
    sequences (xgrammar's own takes none: a string under ``minLength`` could not hold ``\"``
    or ``\n``) and no raw control character; each escape counts as one character, as JSON
    Schema counts the decoded string (a surrogate pair ``\ud83d\ude00`` counts two)."""
    if "basic_escape ::=" not in ebnf:
        return ebnf
    return _BOUNDED_CHARACTER.sub(lambda m: f"{m.group(1)} ::= {_JSON_CHARACTER}", ebnf)


def bounded_ebnf(schema_text: str) -> str | None:
    """The EBNF of ``schema_text`` under the ``bounded`` layout: xgrammar's any-whitespace
    grammar without the gaps before commas and colons and with every other gap replaced by
    :data:`BOUNDED_SPACE`; None if xgrammar's EBNF does not spell gaps the way this expects
    (then the layout bounds characters instead: :func:`layout_options`)."""
    grammar = xgr_grammar(schema_text, any_whitespace=True)
    ebnf = str(grammar)
    if _ANY_SPACE not in ebnf or "fieldstream_space" in ebnf:
        return None
    # No whitespace before a comma or a colon; every other gap is bounded.
    for punctuation in ('","', '":"'):
        ebnf = ebnf.replace(f"{_ANY_SPACE} {punctuation}", punctuation)
    ebnf = escaped_strings(ebnf.replace(_ANY_SPACE, "fieldstream_space"))
    return f"{ebnf}\nfieldstream_space ::= {BOUNDED_SPACE}\n"


def schema_ebnf(schema_text: str, json_format: JsonFormat) -> str:
    """The EBNF of the JSON Schema ``schema_text`` (JSON text) under ``json_format``."""
    if json_format == "bounded":
        ebnf = bounded_ebnf(schema_text)
        if ebnf is not None:
            return ebnf
    return escaped_strings(str(xgr_grammar(schema_text, **layout_options(json_format))))


def laid_out(node: Any, json_format: JsonFormat) -> Any:
    """An xgrammar structural tag (as parsed JSON) whose plain ``json_schema`` contents are
    replaced by ``grammar`` contents: each schema's EBNF under ``json_format``. xgrammar's own
    JSON content can only bound whitespace characters (``max_whitespace_cnt``), not say where
    whitespace goes, so this is how a segment's JSON follows the layout. Contents with other
    options (another ``style``, ``any_order``...) keep them, their schema's patterns loosened
    (``_xgr_schema``) like every schema xgrammar is given."""
    if isinstance(node, list):
        return [laid_out(item, json_format) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "json_schema" and "json_schema" in node:
        if set(node) <= {"type", "json_schema", "style"} and node.get("style", "json") == "json":
            text = json.dumps(node["json_schema"], separators=(",", ":"))
            return {"type": "grammar", "grammar": schema_ebnf(text, json_format)}
        return {**node, "json_schema": loosened(node["json_schema"])}
    return {key: laid_out(value, json_format) for key, value in node.items()}
