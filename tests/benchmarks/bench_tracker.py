"""CPU per output token: the field tracker (+ a simple dispatch loop) next to the bare parser;
and the tracker against pydantic on documents that used to cost it size x depth.

    .venv/bin/python tests/benchmarks/bench_tracker.py [--runs N] [--items N] [--doc-runs N]

Part 1. The document follows a realistic schema (nested objects, arrays of objects, enums,
bounds), cut the way a server streams it: about four characters per token, split where a BPE
tokenizer tends to split (words, a leading space, punctuation runs). Each stage runs over the
whole stream ``--runs`` times; the table shows the median and 90th percentile CPU time per token
and the ratio to the bare parser. "close" is the final validation (pydantic), spread over the
document's tokens. The target: the whole client-side pipeline under 20 µs per token.

Part 2. Whole documents, tracker (fed in tokens, then closed: early pydantic validation of
nested models included) against ``TypeAdapter.validate_json`` on the same text and against the
bare parser: a nested discriminated union (sections of text, code and sections, three deep,
~75 KB) and the same size four times deeper, a recursive model chained 40 and 160 deep
(pydantic's JSON reader stops near 200), and a flat list of 2,000 small models with
validators. "dict" is the tracker on the type's JSON Schema as a plain dict (no pydantic at
all: what pydantic costs is the difference). Each is run ``--doc-runs`` times, interleaved;
medians of CPU time. The issue's
target was within 10x of pydantic; the bare parser alone is the floor (it is pure Python,
pydantic is Rust).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pydantic

import partial
from sdk._events import FieldEvent
from sdk._schema._compile import compile_schema
from sdk._trackers._field import FieldTracker

TARGET_US = 20.0


class Status(StrEnum):
    open = "open"
    paid = "paid"
    shipped = "shipped"
    cancelled = "cancelled"


class Address(pydantic.BaseModel):
    street: str
    city: str
    country: Literal["US", "GB", "FR", "DE", "JP"]
    postcode: str = pydantic.Field(max_length=10)


class Customer(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=60)
    email: str
    tier: Literal["free", "pro", "enterprise"]
    address: Address


class LineItem(pydantic.BaseModel):
    sku: str = pydantic.Field(max_length=12)
    title: str
    quantity: int = pydantic.Field(ge=1)
    unit_price: float = pydantic.Field(ge=0)
    category: Literal["book", "tool", "food", "toy", "other"]
    tags: list[str] = pydantic.Field(default_factory=list, max_length=5)


class Order(pydantic.BaseModel):
    order_id: str
    status: Status
    customer: Customer
    items: list[LineItem]
    notes: str | None = None
    total: float


WORDS = (
    "the quick brown fox jumps over a lazy dog while seven bright lamps glow softly in "
    "an old harbour town near the northern coast beyond quiet hills"
).split()


def make_order(n_items: int, rng: random.Random) -> dict[str, Any]:
    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    items = [
        {
            "sku": f"SKU-{rng.randrange(10**6):06d}",
            "title": words(rng.randint(2, 6)).title(),
            "quantity": rng.randint(1, 20),
            "unit_price": round(rng.uniform(1, 500), 2),
            "category": rng.choice(["book", "tool", "food", "toy", "other"]),
            "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 4))],
        }
        for _ in range(n_items)
    ]
    return {
        "order_id": f"ord_{rng.randrange(10**9)}",
        "status": rng.choice(["open", "paid", "shipped"]),
        "customer": {
            "name": words(2).title(),
            "email": "someone@example.com",
            "tier": rng.choice(["free", "pro", "enterprise"]),
            "address": {
                "street": f"{rng.randint(1, 999)} {words(2).title()} Street",
                "city": words(1).title(),
                "country": rng.choice(["US", "GB", "FR", "DE", "JP"]),
                "postcode": f"{rng.randrange(10**5):05d}",
            },
        },
        "items": items,
        "notes": words(12),
        "total": round(sum(i["quantity"] * i["unit_price"] for i in items), 2),
    }


_TOKEN = re.compile(r"\s*[A-Za-z]{1,6}|\s*[0-9]{1,3}|\s*[^\sA-Za-z0-9]{1,2}|\s+")


def tokens(doc: str) -> list[str]:
    """Split like a BPE tokenizer would, roughly: about four characters per token."""
    out = _TOKEN.findall(doc)
    assert "".join(out) == doc
    return out


def run_parser(chunks: list[str]) -> None:
    p = partial.Parser()
    for c in chunks:
        p.feed(c)
    p.finish()


def run_tracker(chunks: list[str]) -> None:
    t = FieldTracker(Order)
    for c in chunks:
        t.feed(c)
    t.finish()


def _dispatcher() -> Callable[[list[Any]], None]:
    """A simple dispatch loop: callbacks by exact pointer, and one for every field."""
    seen: set[tuple[Any, ...]] = set()
    counts = {"status": 0, "any": 0}

    def on_status(ev: FieldEvent) -> None:
        counts["status"] += 1

    def on_any(ev: FieldEvent) -> None:
        counts["any"] += 1

    by_pointer: dict[str, list[Callable[[FieldEvent], None]]] = {"/status": [on_status]}

    def dispatch(events: list[Any]) -> None:
        for ev in events:
            if type(ev) is not FieldEvent:
                continue
            key = (ev.path, ev.attempt)  # exactly once per (path, value) — cheap key here
            if key in seen:
                continue
            seen.add(key)
            for cb in by_pointer.get(ev.pointer, ()):
                cb(ev)
            on_any(ev)

    return dispatch


def run_pipeline(chunks: list[str]) -> None:
    t = FieldTracker(Order)
    dispatch = _dispatcher()
    for c in chunks:
        dispatch(t.feed(c))
    dispatch(t.finish())


def run_pipeline_close(chunks: list[str]) -> None:
    t = FieldTracker(Order)
    dispatch = _dispatcher()
    for c in chunks:
        dispatch(t.feed(c))
    dispatch(t.finish())
    t.close()


# ---------------------------------------------------------------------- part 2 documents


class Text(pydantic.BaseModel):
    kind: Literal["text"]
    body: str = pydantic.Field(max_length=400)


class Code(pydantic.BaseModel):
    kind: Literal["code"]
    lang: Literal["python", "rust", "sql"]
    source: str

    @pydantic.field_validator("source")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("blank source")
        return v


class Section(pydantic.BaseModel):
    kind: Literal["section"]
    title: str
    blocks: list[Annotated[Text | Code | Section, pydantic.Field(discriminator="kind")]]


class Report(pydantic.BaseModel):
    title: str
    blocks: list[Annotated[Text | Code | Section, pydantic.Field(discriminator="kind")]]


class Link(pydantic.BaseModel):
    name: str
    weight: float = pydantic.Field(ge=0)
    tags: list[str] = []
    next: Link | None = None


class Row(pydantic.BaseModel):
    sku: str = pydantic.Field(max_length=12)
    qty: int = pydantic.Field(ge=1)
    price: float

    @pydantic.model_validator(mode="after")
    def _total(self) -> Row:
        if self.qty * self.price > 1e9:
            raise ValueError("too expensive")
        return self


class Rows(pydantic.BaseModel):
    rows: list[Row]


def make_report(depth: int, leaves: int, rng: random.Random) -> dict[str, Any]:
    """Sections nested ``depth`` deep, ``leaves`` text and code blocks spread over the levels
    (so the size does not depend on the depth)."""

    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k))

    def leaf(i: int) -> dict[str, Any]:
        if i % 2:
            return {"kind": "text", "body": words(rng.randint(8, 30))}
        src = "\n".join(f"x{j} = {rng.randint(0, 99)}" for j in range(rng.randint(1, 6)))
        return {"kind": "code", "lang": rng.choice(["python", "sql"]), "source": src}

    per_level = leaves // depth
    inner: list[dict[str, Any]] = [leaf(i) for i in range(per_level)]
    for level in range(depth - 1):
        section = {"kind": "section", "title": words(3), "blocks": inner}
        inner = [leaf(level * per_level + i) for i in range(per_level)]
        inner.insert(len(inner) // 2, section)
    return {"title": words(4), "blocks": inner}


def make_chain(n: int, rng: random.Random) -> dict[str, Any]:
    node: dict[str, Any] | None = None
    for i in range(n):
        node = {
            "name": f"n{i}",
            "weight": round(rng.uniform(0, 9), 3),
            "tags": [rng.choice(WORDS) for _ in range(3)],
            "next": node,
        }
    assert node is not None
    return node


def make_rows(n: int, rng: random.Random) -> dict[str, Any]:
    return {
        "rows": [
            {"sku": f"S{i:06d}", "qty": rng.randint(1, 9), "price": round(rng.uniform(1, 99), 2)}
            for i in range(n)
        ]
    }


def documents() -> list[tuple[str, Any, str]]:
    """(label, type, text) of part 2, with one line each of what the document is."""
    rng = random.Random(11)
    return [
        ("union 3 deep", Report, json.dumps(make_report(3, 720, rng))),
        ("union 12 deep", Report, json.dumps(make_report(12, 720, rng))),
        ("chain 40", Link, json.dumps(make_chain(40, rng))),
        ("chain 160", Link, json.dumps(make_chain(160, rng))),
        ("2,000 rows", Rows, json.dumps(make_rows(2000, rng))),
    ]


def track_doc(schema: Any, chunks: list[str]) -> None:
    t = FieldTracker(schema)
    for c in chunks:
        t.feed(c)
    t.close()


def part2(runs: int) -> None:
    print()
    print(f"Part 2: whole documents, median CPU ms of {runs} interleaved runs")
    header = f"{'document':<14} {'KB':>6} {'depth':>6} {'pydantic':>9} {'parser':>9} "
    header += f"{'dict':>9} {'tracker':>9} {'tracker/pydantic':>17} {'tracker/parser':>15}"
    print(header)
    for label, schema, text in documents():
        adapter = pydantic.TypeAdapter(schema)
        chunks = tokens(text)
        track_doc(schema, chunks)  # warm up, and check the document is valid
        adapter.validate_json(text)
        as_dict = compile_schema(adapter.json_schema())
        timings: dict[str, list[float]] = {"pydantic": [], "parser": [], "dict": [], "tracker": []}
        stages: list[tuple[str, Callable[[], object]]] = [
            ("pydantic", partial_call(adapter.validate_json, text)),
            ("parser", partial_call(run_parser, chunks)),
            ("dict", partial_call(track_doc, as_dict, chunks)),
            ("tracker", partial_call(track_doc, schema, chunks)),
        ]
        for _ in range(runs):
            for name, fn in stages:
                start = time.process_time_ns()
                fn()
                timings[name].append((time.process_time_ns() - start) / 1e6)
        med = {k: statistics.median(v) for k, v in timings.items()}
        depth = _depth(json.loads(text))
        print(
            f"{label:<14} {len(text) / 1000:>6.1f} {depth:>6} {med['pydantic']:>9.2f} "
            f"{med['parser']:>9.2f} {med['dict']:>9.2f} {med['tracker']:>9.2f} "
            f"{med['tracker'] / med['pydantic']:>16.1f}x {med['tracker'] / med['parser']:>14.2f}x"
        )


def partial_call(fn: Callable[..., object], *args: Any) -> Callable[[], object]:
    return lambda: fn(*args)


def _depth(value: Any) -> int:
    best, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        best = max(best, d)
        if isinstance(v, dict):
            todo.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, d + 1) for x in v)
    return best


def measure(fn: Callable[[list[str]], None], chunks: list[str], runs: int) -> list[float]:
    fn(chunks)  # warm up (and compile the schema once, as a real stream would)
    out = []
    for _ in range(runs):
        start = time.process_time_ns()
        fn(chunks)
        out.append((time.process_time_ns() - start) / 1000 / len(chunks))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--doc-runs", type=int, default=5)
    ap.add_argument("--only", choices=["1", "2"], help="run one part only")
    args = ap.parse_args()
    if args.only != "2":
        part1(args)
    if args.only != "1":
        part2(args.doc_runs)


def part1(args: argparse.Namespace) -> None:
    value = make_order(args.items, random.Random(7))
    doc = json.dumps(value, indent=2)
    chunks = tokens(doc)
    t = FieldTracker(Order)
    for c in chunks:
        t.feed(c)
    assert isinstance(t.close(), Order)
    print(
        f"document: {len(doc)} chars, {len(chunks)} tokens "
        f"({len(doc) / len(chunks):.2f} chars/token), {args.runs} runs, CPU time"
    )
    stages = [
        ("parser (partial)", run_parser),
        ("tracker (parser + checks + events)", run_tracker),
        ("tracker + dispatch loop", run_pipeline),
        ("tracker + dispatch + close()", run_pipeline_close),
    ]
    base = None
    print(f"{'stage':<38} {'median µs/tok':>14} {'p90 µs/tok':>11} {'ratio':>7}")
    for name, fn in stages:
        samples = measure(fn, chunks, args.runs)
        med = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        base = base or med
        print(f"{name:<38} {med:>14.2f} {p90:>11.2f} {med / base:>6.2f}x")
        last = med
    verdict = "meets" if last < TARGET_US else "MISSES"
    print(f"whole pipeline median {last:.2f} µs/token: {verdict} the {TARGET_US:.0f} µs target")


if __name__ == "__main__":
    main()
