"""JSON documents as a model may write them, with what is hard to send on: lone surrogates
(escaped and raw), numbers too big or too small for a double, control characters, ``\\r``,
line breaks and ``data:`` / ``event:`` inside strings. Used by the server-sent events tests
(tests/sdk/web/test_sse_writer.py, and tests/test_web_example.py in a browser).

``canonical`` writes a value as a JavaScript engine holds it (every number a double), so a
value read back in a browser can be compared with the one Python read.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Every code point, surrogates included (hypothesis leaves them out unless told).
CHARS = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
PIECES = st.sampled_from(
    [
        "\ud83d",  # a lone high surrogate
        "\ude00",  # a lone low surrogate
        "\ud83d\ude00",  # a pair, as two code points
        "😀",
        "\r",
        "\n",
        "\r\n",
        "\x00",
        "\x1f",
        "\u2028",
        "\ufeff",
        "data: ",
        "\n\ndata: {",
        "event: failed\n",
        '"',
        "\\",
        "Infinity",
        "NaN",
    ]
)
STRINGS = st.lists(st.one_of(st.text(CHARS, max_size=6), PIECES), max_size=6).map("".join)
NUMBERS = st.one_of(
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(
        [
            "1e400",
            "-1e400",
            "1E+999",
            "1e-400",
            "-1e-400",
            "5e-324",
            "1.7976931348623157e308",
            "1.7976931348623159e308",  # rounds to infinity
            "-0",
            "-0.0",
            "9007199254740993",
            "9" * 400,
        ]
    ),
)


def _string_text(s: str, ascii_only: bool) -> str:
    # ensure_ascii writes a surrogate as its escape; without it, raw (as a str input may hold)
    return json.dumps(s, ensure_ascii=ascii_only)


STRING_TEXTS = st.builds(_string_text, STRINGS, st.booleans())
LEAVES = st.one_of(NUMBERS, STRING_TEXTS, st.sampled_from(["true", "false", "null"]))
DOCUMENTS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(STRING_TEXTS, inner), max_size=4).map(
            lambda members: "{" + ",".join(f"{k}:{v}" for k, v in members) + "}"
        ),
    ),
    max_leaves=12,
)


def canonical(value: Any) -> Any:
    """``value`` as a JavaScript engine holds it, in a form ``==`` compares exactly: a string
    as its UTF-16 code units (a surrogate pair written as two code points is the character
    they make), a number as the ``repr`` of its double (``'-0.0'``, ``'inf'``), an object as a
    dict (key order is the engine's business)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # UTF-16 code units: two surrogates in a row are one character
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, int):
        return ("number", repr(float(str(value))))  # float(str(...)): inf for a huge one
    if isinstance(value, float):
        return ("number", repr(value))
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {canonical(k): canonical(v) for k, v in value.items()}
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def no_constants(name: str) -> Any:
    """For ``json.loads(..., parse_constant=...)``: ``NaN`` and ``Infinity`` are not JSON."""
    raise ValueError(f"{name} is not JSON")
