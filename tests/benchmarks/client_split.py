"""fieldstream's client CPU on the catalog document, in process and without I/O, split by layer.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/client_split.py [--rounds 25]

Each layer is timed over the catalog's 1,143 tokens (the stream of ``bench_client.py --doc
catalog``) as the ratio of its CPU time to ``json.loads`` of the same stream's 1,146 events
(what the floor pays per event) run just before it in the same process: on a shared machine the
ratio moves far less than the times. Medians over the rounds. The layers, each the difference of
two runs:

- **parser**: ``partial.Parser(detail=True)`` with the tracker's runaway bound, fed each token;
- **tracker feed**: :class:`FieldTracker` with a ``_handle`` that does nothing, less the parser;
- **event handling**: the tracker with a schema checker that does nothing and no runaway
  watch, less the above: ``_handle``'s dispatch and the field events it builds;
- **schema checker**: the tracker without its runaway watch, less the above;
- **runaway watch**: the whole tracker, less the above (``sdk/_trackers/_runaway.py``);
- **stream shell**: ``stream_structured`` over an async generator of the tokens (every event
  read, ``result()``), less the whole tracker: the attempt, the source reader, the dispatcher,
  the stream's iteration and the final validation.

Also: the chat decoder (``ChunkDecoder.decode``) and the SSE framing (``EventStreamParser``)
over the same events, where the floor pays httpx-sse and ``json.loads``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from pydantic import BaseModel  # noqa: E402

import partial  # noqa: E402
from sdk._http._framing import EventStreamParser  # noqa: E402
from sdk._http.openai._chat_decoder import ChunkDecoder  # noqa: E402
from sdk._schema._states import NO_INSTANCE  # noqa: E402
from sdk._structured import stream_structured  # noqa: E402
from sdk._trackers._field import FieldTracker  # noqa: E402
from tests.integration.loopback_server import CATALOG_TOKENS, events_for  # noqa: E402


class Item(BaseModel):  # as in client_contenders.py (which needs the bench extra)
    id: int
    name: str
    price: float
    tags: list[str]


class Catalog(BaseModel):
    items: list[Item]


TOKENS = CATALOG_TOKENS
EVENTS = events_for(TOKENS)
_framing = EventStreamParser()
DATA = [e if isinstance(e, str) else e.data for ev in EVENTS for e in _framing.feed_data(ev)]


class _NoChecker:
    """A schema checker that checks nothing (what is left is the tracker's own work)."""

    def value_done(self, path: Any, offset: int, value: Any) -> tuple[int, str, Any, Any]:
        return 0, "string", None, NO_INSTANCE

    def value_start(self, path: Any, offset: int, kind: str) -> bool:
        return False

    def string_delta(self, path: Any, offset: int, text: str) -> None: ...
    def key(self, path: Any, offset: int) -> None: ...
    def key_delta(self, offset: int, text: str) -> None: ...
    def key_start(self, offset: int) -> None: ...
    def comma(self, offset: int) -> None: ...


class _NoHandle(FieldTracker):
    __slots__ = ()

    def _handle(self, events: list[partial.Event]) -> list[Any]:
        return []


def _feed(tracker: FieldTracker) -> None:
    feed = tracker.feed
    for token in TOKENS:
        feed(token)


def parser() -> None:
    p = partial.Parser(detail=True, max_gap=32, gap_per_level=8)
    feed = p.feed
    for token in TOKENS:
        feed(token)
    p.close()


def tracker_no_handle() -> None:
    _feed(_NoHandle(Catalog))


def tracker_no_checker() -> None:
    t = FieldTracker(Catalog)
    t._checker = _NoChecker()  # type: ignore[assignment]
    t._watch = None  # the repetition watch off, the parser's whitespace bound kept
    _feed(t)


def tracker_no_watch() -> None:
    t = FieldTracker(Catalog)
    t._watch = None
    _feed(t)


def tracker() -> None:
    t = FieldTracker(Catalog)
    _feed(t)
    t.close()


async def _tokens() -> AsyncIterator[str]:
    for token in TOKENS:
        yield token


async def _stream() -> None:
    async with stream_structured(_tokens(), schema=Catalog) as s:
        async for _ in s:
            pass
        await s.result()


_loop = asyncio.new_event_loop()


def stream() -> None:
    _loop.run_until_complete(_stream())


def decoder() -> None:
    d = ChunkDecoder()
    decode = d.decode
    for data in DATA:
        decode("", data)


def framing() -> None:
    p = EventStreamParser()
    for ev in EVENTS:
        p.feed_data(ev)


def json_loads() -> None:
    for data in DATA:
        if data != "[DONE]":
            json.loads(data)


RUNS: dict[str, Callable[[], None]] = {
    "parser": parser,
    "tracker, no _handle": tracker_no_handle,
    "tracker, no checker or watch": tracker_no_checker,
    "tracker, no watch": tracker_no_watch,
    "tracker": tracker,
    "stream": stream,
    "chat decoder": decoder,
    "SSE framing": framing,
}
LAYERS = [
    ("parser", "parser", None),
    ("tracker feed", "tracker, no _handle", "parser"),
    ("event handling", "tracker, no checker or watch", "tracker, no _handle"),
    ("schema checker", "tracker, no watch", "tracker, no checker or watch"),
    ("runaway watch", "tracker", "tracker, no watch"),
    ("stream shell", "stream", "tracker"),
    ("(all of the above: the stream)", "stream", None),
    ("chat decoder", "chat decoder", None),
    ("SSE framing", "SSE framing", None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {name: [] for name in RUNS}
    loads: list[float] = []
    for _ in range(args.rounds):
        for name, run in RUNS.items():
            t0 = time.process_time()
            json_loads()
            ref = time.process_time() - t0
            t0 = time.process_time()
            run()
            ratios[name].append((time.process_time() - t0) / ref)
            loads.append(ref / len(TOKENS) * 1e6)
    med = {name: statistics.median(v) for name, v in ratios.items()}
    print(f"json.loads of the events: {statistics.median(loads):.2f} µs/token (median)")
    print("| layer | x json.loads (median of the rounds) |")
    print("|---|---:|")
    for label, whole, less in LAYERS:
        value = med[whole] - (med[less] if less else 0.0)
        print(f"| {label} | {value:.2f} |")


if __name__ == "__main__":
    main()
