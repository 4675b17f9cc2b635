"""Path patterns: JSON Pointer with ``*`` and ``**``, escaping, and matching through the trie."""

from __future__ import annotations

import pytest

from sdk._stream._path_patterns import Pattern, PatternSet, compile_pattern


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("", ()),
        ("/", ("",)),
        ("/items/*/name", ("items", "*", "name")),
        ("/**", ("**",)),
        ("/a~1b", ("a/b",)),
        ("/a~0b", ("a~b",)),
        ("/~01", ("~1",)),  # "~0" first, then a literal "1": not "/"
        ("/~10", ("/0",)),
        ("/a*", ("a*",)),
    ],
)
def test_compile_unescapes_segments(text: str, segments: tuple[str, ...]) -> None:
    assert compile_pattern(text) == Pattern(text, segments)


@pytest.mark.parametrize("text", ["items", "items/0", "/a~", "/a~2", "/~x"])
def test_compile_rejects_what_is_not_a_pointer(text: str) -> None:
    with pytest.raises(ValueError, match="invalid path pattern"):
        compile_pattern(text)


def test_compile_rejects_non_strings() -> None:
    with pytest.raises(TypeError):
        compile_pattern(("items", 0))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("", (), True),
        ("", ("a",), False),
        ("/a", ("a",), True),
        ("/a", (), False),
        ("/a", ("a", "b"), False),
        ("/items/0", ("items", 0), True),
        ("/items/0", ("items", "0"), True),  # JSON Pointer: an index and a key read the same
        ("/items/1", ("items", 0), False),
        ("/items/*/name", ("items", 3, "name"), True),
        ("/items/*/name", ("items", "k", "name"), True),
        ("/items/*/name", ("items", "name"), False),
        ("/items/*/name", ("items", 0, 1, "name"), False),
        ("/*", (), False),
        ("/**", (), True),
        ("/**", ("a", 0, "b"), True),
        ("/**/name", ("name",), True),
        ("/**/name", ("a", 0, "name"), True),
        ("/**/name", ("a", "name", "x"), False),
        ("/items/**", ("items",), True),
        ("/items/**", ("items", 0, "x"), True),
        ("/items/**", ("other", 0), False),
        ("/**/b/**/d", ("a", "b", "c", "d"), True),
        ("/**/b/**/d", ("b", "d"), True),
        ("/**/b/**/d", ("a", "d"), False),
        ("/*/**", (), False),
        ("/*/**", ("x",), True),
        ("/a~1b", ("a/b",), True),
        ("/a~1b", ("a", "b"), False),
        ("/a~0b", ("a~b",), True),
        ("/a~0b/~1", ("a~b", "/"), True),
        ("/a*", ("a*",), True),
        ("/a*", ("ab",), False),
        ("/a.b", ("a.b",), True),
        ("/a.b", ("a", "b"), False),
    ],
)
def test_match(pattern: str, path: tuple[str | int, ...], expected: bool) -> None:
    assert compile_pattern(pattern).matches(path) is expected


def test_pattern_set_returns_every_match_in_registration_order() -> None:
    ps: PatternSet[str] = PatternSet(
        [
            ("/**", "all"),
            ("/items/*/name", "item-name"),
            ("/items/0/name", "first-name"),
            ("/**/name", "any-name"),
            ("/items/*/age", "item-age"),
        ]
    )
    assert ps.match(("items", 0, "name")) == ["all", "item-name", "first-name", "any-name"]
    assert ps.match(("items", 5, "name")) == ["all", "item-name", "any-name"]
    assert ps.match(("items", 5, "age")) == ["all", "item-age"]
    assert ps.match(("other",)) == ["all"]
    assert len(ps) == 5


def test_pattern_set_same_value_under_two_patterns_comes_twice() -> None:
    ps: PatternSet[str] = PatternSet([("/a", "cb"), ("/*", "cb")])
    assert ps.match(("a",)) == ["cb", "cb"]


def test_pattern_set_nested_globstars_do_not_duplicate_a_match() -> None:
    # Many ways to match the same pattern must still give its value once.
    ps: PatternSet[str] = PatternSet([("/**/**/x", "v")])
    assert ps.match(("a", "b", "x")) == ["v"]
    assert ps.match(("x",)) == ["v"]


def test_empty_pattern_set_matches_nothing() -> None:
    assert PatternSet[str]().match(("a",)) == []
