"""The path writer: path-addressed leaves in document order make the JSON text ``json.dumps``
would write, piece by piece; every way the paths can go wrong is a PartialArgumentsError that
names the path."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk import PartialArgumentsError
from sdk._http._path_writer import MAX_DEPTH, PathWriter, parse_json_path


def leaves(value: Any, path: str = "$") -> list[tuple[str, Any]]:
    """``value``'s leaves in document order, each at its path (empty containers as leaves)."""
    if isinstance(value, dict) and value:
        out: list[tuple[str, Any]] = []
        for key, sub in value.items():
            step = f".{key}" if key.isidentifier() else "[" + json.dumps(key) + "]"
            out.extend(leaves(sub, path + step))
        return out
    if isinstance(value, list) and value:
        return [pair for i, sub in enumerate(value) for pair in leaves(sub, f"{path}[{i}]")]
    return [(path, value)]


def write(value: dict[str, Any], rng: random.Random | None = None) -> list[str]:
    """The pieces a writer gives for ``value``'s leaves (strings in random pieces)."""
    w = PathWriter()
    pieces = [w.begin()]
    for path, leaf in leaves(value) if value else []:
        if isinstance(leaf, str):
            cut = sorted(rng.sample(range(len(leaf) + 1), min(2, len(leaf) + 1))) if rng else []
            parts = [leaf[a:b] for a, b in zip([0, *cut], [*cut, len(leaf)], strict=True)]
            for i, part in enumerate(parts):
                pieces.append(w.string(path, part, more=i < len(parts) - 1))
        elif isinstance(leaf, bool) or leaf is None:
            pieces.append(w.literal(path, leaf))
        elif isinstance(leaf, (int, float)):
            pieces.append(w.number(path, leaf))
        else:
            pieces.append(w.empty(path, array=isinstance(leaf, list)))
    pieces.append(w.close())
    return pieces


DOCUMENTS = [
    {},
    {"a": "x"},
    {"recipe": {"name": "Lasagna", "ingredients": [{"amount": "16 oz", "name": "noodles"}]}},
    {"m": [[1, 2], [3.5, [True, None]]], "k": {"a b": 'q"u\\o\nte', "é.x": ""}, "z": False},
    {"tags": [], "meta": {}, "deep": {"x": [{"y": []}]}, "n": -0.25, "big": 2**60},
]


@pytest.mark.parametrize("doc", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_the_text_is_the_document(doc: dict[str, Any]) -> None:
    for seed in range(20):
        text = "".join(write(doc, random.Random(seed)))
        assert json.loads(text) == doc


def test_integral_doubles_are_integers() -> None:
    w = PathWriter()
    text = w.number("$.a", 50.0) + w.number("$.b", 0.5) + w.number("$.c", 1e300) + w.close()
    assert json.loads(text) == {"a": 50, "b": 0.5, "c": 1e300}
    assert '"a":50,' in text


def test_each_value_is_final_in_the_text_as_soon_as_the_wire_says() -> None:
    w = PathWriter()
    assert w.begin() + w.number("$.n", 1) == '{"n":1'  # a number: whole at once
    assert w.string("$.s", "ab", more=True) == ',"s":"ab'  # still open
    assert w.string("$.s", "c", more=False) == 'c"'  # its last piece closes it
    assert w.string("$.t", "x", more=True) == ',"t":"x'
    assert w.literal("$.u", None) == '",' + '"u":null'  # the next path closes the string


def test_paths() -> None:
    assert parse_json_path("$") == ()
    assert parse_json_path("$.a.b[0].c") == ("a", "b", 0, "c")
    assert parse_json_path('$[\'a b\']["c\\"d"][12]') == ("a b", 'c"d', 12)
    assert parse_json_path("$['\\u00e9\\n']") == ("é\n",)
    assert parse_json_path("$.foo-bar") == ("foo-bar",)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("a.b", "starts with '$'"),
        ("$..a", "empty member name"),
        ("$.*", "wildcard"),
        ("$[-1]", "not an index to one value"),
        ("$[01]", "not an index to one value"),
        ("$[0:2]", "not an index to one value"),
        ("$[?@.a]", "not an index to one value"),
        ("$['ab", "unclosed quoted name"),
        ("$['a'", "expected ']' after the quoted name"),
        ("$['a'x]", "expected ']'"),
        ("$[1", "unclosed '['"),
        ("$a", "unexpected 'a'"),
        ("$['\\q']", "bad escape"),
    ],
)
def test_paths_to_more_than_one_value_are_refused(path: str, said: str) -> None:
    with pytest.raises(PartialArgumentsError, match=re.escape(said)) as info:
        parse_json_path(path)
    assert info.value.json_path == path
    assert not info.value.retryable


def fails(*steps: tuple[str, str, Any], said: str) -> PartialArgumentsError:
    w = PathWriter("the arguments of call 0 (f)")
    with pytest.raises(PartialArgumentsError, match=said) as info:
        for kind, path, value in steps:
            if kind == "s":
                w.string(path, value, more=False)
            elif kind == "open":
                w.string(path, value, more=True)
            elif kind == "n":
                w.number(path, value)
            else:
                w.literal(path, value)
    assert str(info.value).startswith("the arguments of call 0 (f): at ")
    return info.value


def test_hostile_paths() -> None:
    # Going back: a member written twice, an object left and entered again, an index repeated.
    fails(("n", "$.a", 1), ("n", "$.b", 2), ("n", "$.a", 3), said="'a' of \\$ came again")
    fails(("n", "$.a.x", 1), ("n", "$.b", 2), ("n", "$.a.y", 3), said="'a' of \\$ came again")
    fails(("n", "$.l[0]", 1), ("n", "$.l[1]", 2), ("n", "$.l[0]", 3), said="goes back to \\[0\\]")
    fails(("s", "$.a", "x"), ("s", "$.a", "y"), said="came again after it was final")
    # Skipping, or starting an array elsewhere than 0.
    fails(("n", "$.l[0]", 1), ("n", "$.l[2]", 2), said="skips to \\[2\\]; \\[1\\] is next")
    fails(("n", "$.l[3]", 1), said="skips to \\[3\\]; \\[0\\] is next")
    # Type changes.
    fails(("n", "$.a", 1), ("n", "$.a.b", 2), said="no container, yet a path goes into it")
    fails(("n", "$.a.b", 1), ("n", "$.a", 2), said="a container is there")
    fails(("n", "$.a[0]", 1), ("n", "$.a.b", 2), said="is an array: its members have indices")
    fails(("n", "$.a.b", 1), ("n", "$.a[0]", 2), said="is an object: its members have names")
    fails(("open", "$.a", "x"), ("n", "$.a", 2), said="still open")
    fails(("n", "$[0]", 1), said="is an object: its members have names")
    fails(("n", "$", 1), said="no value can be put at \\$ itself")
    # Values that are no JSON.
    fails(("n", "$.a", float("nan")), said="no JSON number")
    fails(("n", "$.a", "1"), said="a number is expected")


def test_an_absurd_depth_is_refused() -> None:
    w = PathWriter()
    w.number("$" + ".a" * MAX_DEPTH, 1)  # the limit itself is fine
    deep = "$" + ".a" * (MAX_DEPTH + 1)
    with pytest.raises(PartialArgumentsError, match=f"deeper than {MAX_DEPTH} steps") as info:
        PathWriter().number(deep, 1)
    assert info.value.json_path == deep


def test_nothing_after_the_end() -> None:
    w = PathWriter()
    assert w.close() == "{}"
    assert w.close() == ""
    with pytest.raises(PartialArgumentsError, match="after the end"):
        w.number("$.a", 1)


PATHS = ["$.a", "$.b", "$.a.x", "$.a.y", "$.l[0]", "$.l[1]", "$.l[0].x", "$.l[1][0]", "$[0]", "$"]
OPS = st.tuples(
    st.sampled_from(PATHS),
    st.sampled_from(["string", "open", "number", "null", "array", "object"]),
)


@given(st.lists(OPS, max_size=12))
def test_any_sequence_is_json_or_our_error(ops: list[tuple[str, str]]) -> None:
    # Whatever the server sends, the writer gives JSON text (json.loads reads it, an object)
    # or raises PartialArgumentsError: never another exception, never text that is not JSON.
    w = PathWriter()
    pieces = [w.begin()]
    try:
        for path, kind in ops:
            if kind in ("string", "open"):
                pieces.append(w.string(path, 'x"\\', more=kind == "open"))
            elif kind == "number":
                pieces.append(w.number(path, 1.5))
            elif kind == "null":
                pieces.append(w.literal(path, None))
            else:
                pieces.append(w.empty(path, array=kind == "array"))
    except PartialArgumentsError:
        return
    pieces.append(w.close())
    assert isinstance(json.loads("".join(pieces)), dict)
