"""Validated, then dispatched, for generated pydantic types: the judge is pydantic itself.

Hypothesis builds a pydantic type — a model (with or without a model validator), a
``TypedDict``, a pydantic dataclass, a ``RootModel``, a bare ``list``/``dict``/set, an
``Annotated`` scalar, unions, nesting — out of pieces pydantic judges beyond their JSON Schema
(validators, patterns pydantic-core reads with its own engine, strict and lax scalars, ``bytes``
bounds, a float ``multiple_of``, sets, dates, transformed strings), and a document for it, often
wrong on purpose. The document streams through a :class:`~sdk.FieldTracker` in random chunks
(``dispatch="validated"``, the default), and ``validate_json`` of the whole document judges:

- no field event carries a value pydantic refuses there (no error of pydantic's lies at or
  under an event's path; an error inside a union's branch counts at the union's own path);
- no document pydantic accepts is aborted (neither early nor at ``close()``).

The default run is small enough for CI; ``FIELDSTREAM_DISPATCH_EXAMPLES=3000`` runs more, and
``FIELDSTREAM_DISPATCH_TALLY=FILE`` counts the failing examples into ``FILE`` (one line each)
instead of stopping at the first (how docs/reliability.md's figures were taken).
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass, make_dataclass
from typing import Annotated, Any, Literal, Union

import pydantic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    RootModel,
    Strict,
    StringConstraints,
    model_validator,
)
from typing_extensions import TypedDict

from sdk._errors import SchemaViolation, ValidationFailed
from sdk._events import FieldEvent
from sdk._trackers._field import FieldTracker

EXAMPLES = int(os.environ.get("FIELDSTREAM_DISPATCH_EXAMPLES", "200"))
TALLY = os.environ.get("FIELDSTREAM_DISPATCH_TALLY")


# ---------------------------------------------------------------- validators (pure)


def lower(s: str) -> str:
    if s != s.lower():
        raise ValueError("lower case only")
    return s


def small(n: int) -> int:
    if n > 5:
        raise ValueError("at most 5")
    return n


def short(v: Any) -> Any:
    if len(v) > 2:
        raise ValueError("at most 2 items")
    return v


def stripped(v: Any) -> Any:
    return v.strip() if isinstance(v, str) else v


# ---------------------------------------------------------------- types and their values


@dataclass
class Spec:
    """A pydantic type and a strategy for JSON values near it (valid or not)."""

    type: Any
    values: st.SearchStrategy[Any]


STRINGS = ["a", "B", "abc", " x ", "\ufeff", " ", "a\u00e9", "\u0661\u0662", "12", "ab_c", ""]
NUMBERS: list[Any] = [0, 1, 2, 7, 12, -2, 1.0, 2.0, 1.5, 0.3, 0.7, 1e-17, 0.25, 0.35, 1e308]
LAX: list[Any] = ["4", "5.5", " 6 ", "0.3", True, False, "1_0", "x", None]
PATTERNS = [r"^\s$", r"^a\b", r"^[a-z]+$", r"^\w+$", r"^\d+$", r"^.{1,2}$", r"\S"]


def _s(items: list[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from(items)


def hashable_leaves() -> st.SearchStrategy[Spec]:
    """Leaves fit for a set's items."""
    return st.one_of(
        st.just(Spec(str, _s(STRINGS))),
        st.just(Spec(Annotated[str, AfterValidator(lower)], _s(STRINGS))),
        _s(PATTERNS).map(lambda p: Spec(Annotated[str, Field(pattern=p)], _s(STRINGS))),
        st.just(Spec(int, _s(NUMBERS + LAX))),
        st.just(Spec(Annotated[int, Strict()], _s(NUMBERS + LAX))),
        st.just(Spec(Annotated[int, AfterValidator(small)], _s(NUMBERS + LAX))),
    )


def leaves() -> st.SearchStrategy[Spec]:
    strings = _s(STRINGS)
    numbers = _s(NUMBERS + LAX)
    return st.one_of(
        st.just(Spec(str, strings)),
        _s(PATTERNS).map(lambda p: Spec(Annotated[str, Field(pattern=p)], strings)),
        st.just(Spec(Annotated[str, Field(min_length=2, max_length=3)], strings)),
        st.just(Spec(Annotated[str, AfterValidator(lower)], strings)),
        st.just(Spec(Annotated[str, BeforeValidator(stripped)], st.one_of(strings, numbers))),
        st.just(
            Spec(Annotated[str, StringConstraints(strip_whitespace=True, max_length=2)], strings)
        ),
        st.just(Spec(int, numbers)),
        st.just(Spec(Annotated[int, Field(ge=0, le=10, multiple_of=2)], numbers)),
        st.just(Spec(Annotated[int, Strict()], numbers)),
        st.just(Spec(Annotated[int, AfterValidator(small)], numbers)),
        _s([0.1, 0.25, 0.5]).map(lambda m: Spec(Annotated[float, Field(multiple_of=m)], numbers)),
        st.just(Spec(Annotated[float, Strict()], numbers)),
        st.just(Spec(bool, _s([True, False, 0, 1, 2, "yes", "true", "maybe", 1.0]))),
        st.just(Spec(Annotated[bool, Strict()], _s([True, False, 0, 1, "true"]))),
        st.just(Spec(Annotated[bytes, Field(max_length=2)], strings)),
        st.just(Spec(Annotated[bytes, Field(min_length=2)], strings)),
        st.just(Spec(datetime.date, _s(["2024-02-03", "2024-02-30", 0, "x", 1.5]))),
        st.just(Spec(Literal["a", "b"], _s(["a", "b", "c", 1]))),
        st.just(Spec(Literal[1, 2], _s([1, 2, 3, True, 1.0, "1"]))),
    )


def no_b(self: Any) -> Any:
    """A model validator: no field may be ``"B"`` (judged on the whole object)."""
    if any(v == "B" for v in vars(self).values()):
        raise ValueError("no field may be 'B'")
    return self


def _model(fields: list[Spec], name: str, kind: str) -> Spec:
    """A model (``kind`` ``"model"``, or ``"checked"`` with a model validator), a
    ``TypedDict`` or a pydantic dataclass with these fields."""
    keys = [f"f{i}" for i in range(len(fields))]
    types = {k: f.type for k, f in zip(keys, fields, strict=True)}
    shape: Any
    if kind == "typeddict":
        make: Any = TypedDict  # (the functional form, with types made at run time)
        shape = make(name, types)
    elif kind == "dataclass":
        shape = pydantic.dataclasses.dataclass(make_dataclass(name, list(types.items())))
    else:
        validators = {"no_b": model_validator(mode="after")(no_b)} if kind == "checked" else {}
        shape = pydantic.create_model(  # type: ignore[call-overload]
            name, __validators__=validators, **{k: (t, ...) for k, t in types.items()}
        )
    full = st.fixed_dictionaries({k: f.values for k, f in zip(keys, fields, strict=True)})
    # Sometimes a key missing or one more.
    values = st.one_of(
        full,
        full.map(lambda d: dict(list(d.items())[1:])),
        full.map(lambda d: {**d, "extra": 1}),
    )
    return Spec(shape, values)


_counter = [0]


def _name() -> str:
    _counter[0] += 1
    return f"M{_counter[0]}"


def _list(t: Any, *meta: Any) -> Any:
    return Annotated[list[t], *meta] if meta else list[t]


def _set(t: Any, frozen: bool) -> Any:
    if frozen:
        return Annotated[frozenset[t], Field(min_length=2, max_length=2)]
    return set[t]


def _dict(t: Any) -> Any:
    return dict[str, t]


def _union(a: Any, b: Any) -> Any:
    return Union[a, b]  # noqa: UP007


def _root(t: Any) -> Any:
    return RootModel[t]


def extend(inner: st.SearchStrategy[Spec]) -> st.SearchStrategy[Spec]:
    """Containers of ``inner``'s types."""
    items = 4
    return st.one_of(
        inner.map(lambda s: Spec(_list(s.type), st.lists(s.values, max_size=items))),
        inner.map(
            lambda s: Spec(_list(s.type, Field(max_length=3)), st.lists(s.values, max_size=items))
        ),
        inner.map(
            lambda s: Spec(_list(s.type, AfterValidator(short)), st.lists(s.values, max_size=items))
        ),
        inner.map(
            lambda s: Spec(
                _dict(s.type), st.dictionaries(_s(["k", "x", "y"]), s.values, max_size=3)
            )
        ),
        st.tuples(hashable_leaves(), st.booleans()).map(
            lambda p: Spec(_set(p[0].type, p[1]), st.lists(p[0].values, max_size=items))
        ),
        st.tuples(inner, inner).map(
            lambda p: Spec(_union(p[0].type, p[1].type), st.one_of(p[0].values, p[1].values))
        ),
        inner.map(lambda s: Spec(_root(s.type), s.values)),
        st.tuples(
            st.lists(inner, min_size=1, max_size=3),
            _s(["model", "model", "checked", "typeddict", "dataclass"]),
        ).map(lambda p: _model(p[0], _name(), p[1])),
    )


specs = st.recursive(leaves(), extend, max_leaves=6)


# ---------------------------------------------------------------- the judge


def places(loc: tuple[Any, ...], doc: Any, kind: str) -> tuple[Any, ...]:
    """pydantic's error location as a path into the document: the steps that name a member
    of the value there, up to a union's branch label (a branch's error refuses the union's
    value; a member another branch still accepted may have gone out, as docs/events.md says);
    a missing key's name stays."""
    out: list[Any] = []
    here = doc
    for i, step in enumerate(loc):
        if isinstance(here, dict) and step in here:
            out.append(step)
            here = here[step]
        elif isinstance(here, list) and isinstance(step, int) and 0 <= step < len(here):
            out.append(step)
            here = here[step]
        elif kind == "missing" and i == len(loc) - 1:
            out.append(step)
        else:
            break  # a union's branch label (or a tag): the union's value is refused
    return tuple(out)


def refused_at(schema: Any, text: str) -> list[tuple[Any, ...]] | None:
    """Where pydantic refuses the document (``None``: it accepts it)."""
    try:
        pydantic.TypeAdapter(schema).validate_json(text)
    except pydantic.ValidationError as exc:
        doc = json.loads(text)
        return [places(tuple(e["loc"]), doc, e["type"]) for e in exc.errors()]
    return None


def problems(schema: Any, text: str, sizes: list[int]) -> list[str]:
    """What breaks the promise when ``text`` streams in chunks of ``sizes`` (cycled)."""
    refused = refused_at(schema, text)
    tracker = FieldTracker(schema)
    events: list[FieldEvent] = []
    error: BaseException | None = None
    try:
        at = 0
        i = 0
        while at < len(text):
            n = sizes[i % len(sizes)]
            events.extend(e for e in tracker.feed(text[at : at + n]) if isinstance(e, FieldEvent))
            at += n
            i += 1
        events.extend(e for e in tracker.finish() if isinstance(e, FieldEvent))
        tracker.close()
    except (SchemaViolation, ValidationFailed) as exc:
        error = exc
    out: list[str] = []
    if refused is None and error is not None:
        out.append(f"pydantic accepts it, the tracker aborted: {error!r}")
    for ev in events:
        for where in refused or ():
            if where[: len(ev.path)] == ev.path:
                out.append(
                    f"event {ev.pointer or '/'} = {ev.value!r} went out; pydantic "
                    f"refuses {'/'.join(map(str, where)) or '/'}"
                )
                break
    if refused is not None and error is None:
        out.append("pydantic refuses it, the tracker accepted it")
    return out


def _record(schema: Any, text: str, found: list[str]) -> None:
    assert TALLY is not None
    with open(TALLY, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": repr(schema), "doc": text, "problems": found}) + "\n")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    data=st.data(),
    spec=specs,
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    ascii_=st.booleans(),
)
def test_no_event_carries_a_value_pydantic_refuses_and_nothing_it_accepts_aborts(
    data: st.DataObject, spec: Spec, sizes: list[int], ascii_: bool
) -> None:
    value = data.draw(spec.values, label="document")
    text = json.dumps(value, ensure_ascii=ascii_)
    found = problems(spec.type, text, sizes)
    if TALLY is not None:
        if found:
            _record(spec.type, text, found)
        return
    assert found == [], (spec.type, text)
