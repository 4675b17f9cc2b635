"""CPU per output token: the field tracker (+ a simple dispatch loop) next to the bare parser.

    .venv/bin/python tests/benchmarks/bench_tracker.py [--runs N] [--items N]

The document follows a realistic schema (nested objects, arrays of objects, enums, bounds),
cut the way a server streams it: about four characters per token, split where a BPE tokenizer
tends to split (words, a leading space, punctuation runs). Each stage runs over the whole
stream ``--runs`` times; the table shows the median and 90th percentile CPU time per token and
the ratio to the bare parser. "close" is the final validation (jsonschema + pydantic), spread
over the document's tokens. The target: the whole client-side pipeline under 20 µs per token.
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
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pydantic

import partial
from sdk._events import FieldEvent
from sdk._tracker import FieldTracker

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
    args = ap.parse_args()
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
