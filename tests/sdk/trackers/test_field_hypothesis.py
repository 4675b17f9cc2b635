"""Properties, with hypothesis: early checks never fire on a valid document, however it is
chunked, and every value fires exactly once; a document with one injected error fails at the
right path no later than the offending character, and nothing fires one character before."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import partial
from sdk._errors import SchemaViolation
from sdk._events import FieldEvent
from sdk._trackers._field import FieldTracker
from tests.sdk.trackers._tracker_support import feed_chunks

Path = tuple[str | int, ...]

SCHEMA: dict[str, Any] = {
    "$defs": {
        "item": {
            "type": "object",
            "properties": {
                "sku": {"type": "string", "maxLength": 8},
                "qty": {"type": "integer", "minimum": 1},
                "price": {"type": "number", "minimum": 0},
                "tags": {"type": "array", "items": {"enum": ["new", "sale", "gift"]},
                         "maxItems": 3},
            },
            "required": ["sku", "qty"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "status": {"enum": ["open", "paid", "shipped"]},
        "customer": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 20},
                "vip": {"type": "boolean"},
                "note": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 4},
    },
    "required": ["id", "status", "items"],
    "additionalProperties": False,
}  # fmt: skip

VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
short = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)

items = st.fixed_dictionaries(
    {"sku": short, "qty": st.integers(1, 10**9) | st.integers(1, 1000).map(float)},
    optional={
        "price": st.integers(0, 10**6) | st.floats(0, 1e9, allow_nan=False),
        "tags": st.lists(st.sampled_from(["new", "sale", "gift"]), max_size=3),
    },
)
documents = st.fixed_dictionaries(
    {
        "id": text,
        "status": st.sampled_from(["open", "paid", "shipped"]),
        "items": st.lists(items, max_size=4),
    },
    optional={
        "customer": st.fixed_dictionaries(
            {"name": st.text(max_size=20)},
            optional={"vip": st.booleans(), "note": st.none() | st.text(max_size=10)},
        )
    },
)


@st.composite
def serialized(draw: st.DrawFn, value: Any) -> str:
    indent = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]))
    return json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))


@st.composite
def chunked(draw: st.DrawFn, doc: str) -> list[str]:
    sizes = draw(st.lists(st.integers(1, 12), max_size=len(doc) + 1))
    out, i = [], 0
    for n in sizes:
        if i >= len(doc):
            break
        out.append(doc[i : i + n])
        i += n
    if i < len(doc):
        out.append(doc[i:])
    return out


def all_paths(value: Any, path: Path = ()) -> list[Path]:
    out: list[Path] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += all_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += all_paths(v, (*path, i))
    out.append(path)
    return out


def at(value: Any, path: Path) -> Any:
    for p in path:
        value = value[p]
    return value


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=st.data())
def test_valid_documents_pass_and_every_value_fires_once(data: st.DataObject) -> None:
    value = data.draw(documents)
    assert VALIDATOR.is_valid(value)
    doc = data.draw(serialized(value))
    chunks = data.draw(chunked(doc))
    t = FieldTracker(SCHEMA)
    events = [e for e in feed_chunks(t, chunks) if isinstance(e, FieldEvent)]
    assert t.close() == value
    assert sorted(map(repr, (e.path for e in events))) == sorted(map(repr, all_paths(value)))
    for e in events:
        assert e.value == at(value, e.path)


def _events_of(doc: str) -> list[partial.Event]:
    p = partial.Parser(detail=True)
    events = p.feed(doc)
    events += p.finish()
    return events


def _offset(events: list[partial.Event], kind: type, path: Path) -> int:
    return next(e.offset for e in events if type(e) is kind and e.path == path)


@st.composite
def broken(draw: st.DrawFn) -> tuple[Any, Path, str, str]:
    """A document with one error: (value, path of the violation, keyword, where) where
    ``where`` names the parser event at (or before) which it must be raised."""
    value = draw(documents)
    options = ["status", "type", "extra-key", "required", "id-type"]
    if value["items"]:
        options += ["sku-long", "qty-min", "tag"]
    if len(value["items"]) == 4:
        options.append("max-items")
    if "customer" in value:
        options += ["note", "customer-key"]
    choice = draw(st.sampled_from(options))
    if choice == "status":
        value["status"] = draw(
            st.text(min_size=1).filter(
                lambda s: not any(m.startswith(s) for m in ("open", "paid", "shipped"))
            )
        )
        return value, ("status",), "enum", "done"
    if choice == "type":
        value["items"] = draw(st.sampled_from([{}, "x", 1, None, True]))
        return value, ("items",), "type", "start"
    if choice == "id-type":
        value["id"] = draw(st.integers() | st.lists(st.integers(), max_size=2))
        return value, ("id",), "type", "start"
    if choice == "extra-key":
        key = draw(st.text().filter(lambda k: k not in SCHEMA["properties"]))
        value[key] = draw(st.integers())
        return value, (key,), "additionalProperties", "key"
    if choice == "required":
        key = draw(st.sampled_from(["id", "status", "items"]))
        del value[key]
        return value, (), "required", "done"
    i = draw(st.integers(0, len(value["items"]) - 1)) if value["items"] else 0
    if choice == "sku-long":
        value["items"][i]["sku"] = draw(st.text(min_size=9, max_size=12))
        return value, ("items", i, "sku"), "maxLength", "done"
    if choice == "qty-min":
        value["items"][i]["qty"] = draw(st.integers(max_value=0) | st.integers(-1000, 0).map(float))
        return value, ("items", i, "qty"), "minimum", "done"
    if choice == "tag":
        tags = value["items"][i].setdefault("tags", [])
        if len(tags) == 3:
            tags.pop()
        tags.append(
            draw(
                st.text(min_size=1).filter(
                    lambda s: not any(m.startswith(s) for m in ("new", "sale", "gift"))
                )
            )
        )
        return value, ("items", i, "tags", len(tags) - 1), "enum", "done"
    if choice == "max-items":
        value["items"].append({"sku": "", "qty": 1})
        return value, ("items", 4), "maxItems", "comma"
    if choice == "note":
        value["customer"]["note"] = draw(st.text(min_size=11, max_size=14))
        return value, ("customer", "note"), "maxLength", "done"
    value["customer"]["vip"] = draw(st.sampled_from(["yes", 1, None]))
    return value, ("customer", "vip"), "type", "start"


@SETTINGS
@given(data=st.data())
def test_one_injected_error_fails_at_its_path_no_later_than_its_character(
    data: st.DataObject,
) -> None:
    value, path, keyword, where = data.draw(broken())
    assert not VALIDATOR.is_valid(value)
    doc = data.draw(serialized(value))
    events = _events_of(doc)
    if where == "start":
        latest = _offset(events, partial.ValueStart, path)
    elif where == "key":
        latest = _offset(events, partial.Key, path)
    elif where == "comma":  # the comma before the element one too many
        assert isinstance(path[-1], int)
        commas = [e.offset for e in events if type(e) is partial.Comma and e.path == path[:-1]]
        latest = commas[path[-1] - 1]
    else:
        latest = _offset(events, partial.ValueDone, path)
    # One character at a time: where does it fail?
    t = FieldTracker(SCHEMA)
    failed_at = None
    prefix_seen = ""
    for i, ch in enumerate(doc):
        try:
            t.feed(ch)
        except SchemaViolation as exc:
            failed_at = i
            if where == "key":
                # Refused while the key streams, at its first letter no allowed key has; or at
                # its closing quote when every allowed key it could become is longer.
                assert exc.keyword == keyword and exc.path[:-1] == path[:-1], str(exc)
                prefix = exc.path[-1]
                assert isinstance(prefix, str) and isinstance(path[-1], str)
                names = SCHEMA["properties"]
                if prefix == path[-1] and any(n.startswith(prefix) for n in names):
                    assert i == latest
                else:
                    assert path[-1].startswith(prefix)
                    assert not any(n.startswith(prefix) for n in names)
                    assert any(n.startswith(prefix[:-1]) for n in names)
                prefix_seen = prefix
            else:
                assert (exc.path, exc.keyword) == (path, keyword), str(exc)
            assert exc.offset is not None and exc.offset <= i
            break
    assert failed_at is not None and failed_at <= latest
    if where in ("start", "comma"):
        assert failed_at == latest  # first character / comma: exactly there
    # Everything before that character passes, however it is chunked.
    feed_chunks(FieldTracker(SCHEMA), data.draw(chunked(doc[:failed_at])))
    # And the same chunking plus the rest fails the same way.
    t = FieldTracker(SCHEMA)
    try:
        feed_chunks(t, [*data.draw(chunked(doc[:failed_at])), doc[failed_at:]])
    except SchemaViolation as exc:
        if where == "key":
            assert exc.keyword == keyword and exc.path == (*path[:-1], prefix_seen)
        else:
            assert (exc.path, exc.keyword) == (path, keyword)
    else:
        raise AssertionError("no violation")
