"""EventStreamParser: ``text/event-stream`` bytes -> events, without I/O, under every chunking.

The expected events come from :func:`reference`, a direct transcription of the WHATWG
interpretation over the whole body at once (no incremental state), so every split of a body
into pieces must give what the whole body gives."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._http._framing import EventStreamError, EventStreamParser, ServerSentEvent

CORPUS = sorted((Path(__file__).parents[2] / "data" / "openai_sse").glob("*.sse"))
BOM = "\ufeff".encode()


def reference(body: bytes) -> list[ServerSentEvent]:
    """The events of a whole body: decode, drop one BOM, split lines, drop the unfinished last
    line (and with it any event not ended by a blank line), interpret each line."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = re.split(r"\r\n|\r|\n", text)
    lines.pop()  # what follows the last line end: not a line
    events: list[ServerSentEvent] = []
    event, data, last_id, retry, fields = "", [], "", None, False
    for line in lines:
        if line == "":
            if fields:
                events.append(ServerSentEvent(event, "\n".join(data), last_id, retry))
            event, data, retry, fields = "", [], None, False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
        else:
            continue
        fields = True
    return events


def parse(pieces: list[bytes], **kw: int) -> list[ServerSentEvent]:
    parser = EventStreamParser(**kw)
    return [event for piece in pieces for event in parser.feed(piece)]


def splits(body: bytes, seed: int = 0) -> list[list[bytes]]:
    """The body whole, byte by byte, in 2-, 3- and 7-byte pieces, and at random cuts."""
    rng = random.Random(seed)
    out = [[body], [body[i : i + 1] for i in range(len(body))]]
    out += [[body[i : i + n] for i in range(0, len(body), n)] for n in (2, 3, 7)]
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(body)), min(8, len(body) - 1))) if body else []
        out.append([body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)])
    return out


DOC = (
    b'data: {"a":1}\n\n'
    b": keep-alive\n\n"
    b"event: message\nid: 7\nretry: 1500\ndata: line one\ndata: line two\nx-unknown: 1\n\n"
    b"data:no space\n\n"
    b"data\n\n"
    b"data:\n\n"
    b"event: error\n\n"
    b"data: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n\n"
    b"data: after\n\n"
)

CASES = {
    "lf": DOC,
    "crlf": DOC.replace(b"\n", b"\r\n"),
    "cr": DOC.replace(b"\n", b"\r"),
    "mixed": b'data: {"a":1}\r\n\r\ndata: x\rdata: y\n\r\ndata: z\r\r',
    "bom": BOM + DOC,
    "bom-crlf": BOM + DOC.replace(b"\n", b"\r\n"),
    "cut-at-end": DOC + b"data: never dispatched\n",
    "cut-mid-line": DOC + b"data: never",
    "only-comments": b": ping\n\n: pong\r\n\r\n",
    "id-with-nul": b"id: 1\n\ndata: a\nid: 2\x003\n\ndata: b\n\n",
    "bad-retry": b"retry: 12a\ndata: a\n\nretry: \n\nretry: 40\n\n",
    "invalid-utf8": b"data: \xff\xfe ok\n\n",
    "empty": b"",
}


@pytest.mark.parametrize("body", CASES.values(), ids=list(CASES))
def test_every_split_gives_the_events_of_the_whole_body(body: bytes) -> None:
    expected = reference(body)
    for pieces in splits(body):
        assert parse(pieces) == expected, [len(p) for p in pieces]


def test_the_reference_reads_the_document_as_the_spec_says() -> None:
    # The oracle itself, on the plain document: what each line does.
    assert reference(DOC) == [
        ServerSentEvent("", '{"a":1}', "", None),
        ServerSentEvent("message", "line one\nline two", "7", 1500),
        ServerSentEvent("", "no space", "7", None),
        ServerSentEvent("", "", "7", None),
        ServerSentEvent("", "", "7", None),
        ServerSentEvent("error", "", "7", None),
        ServerSentEvent("", "café € 😀", "7", None),
        ServerSentEvent("", "after", "7", None),
    ]


def test_a_cr_at_the_end_of_a_piece_pairs_with_a_lf_at_the_start_of_the_next() -> None:
    # Were the \r and \n read as two line ends, the blank line would end the event early.
    assert parse([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]) == [
        ServerSentEvent("", "a\nb", "", None)
    ]
    # A lone \r is a line end of its own: the \n after the next text is another.
    assert parse([b"data: a\r", b"\r"]) == [ServerSentEvent("", "a", "", None)]


def test_a_bom_only_at_the_start_is_dropped() -> None:
    assert parse([BOM[:1], BOM[1:2], BOM[2:] + b"data: x\n\n"]) == [
        ServerSentEvent("", "x", "", None)
    ]
    # Later in the stream it is text: here it makes the field name unknown.
    assert parse([b"data: x\n\n" + BOM + b"data: y\n\n"]) == [ServerSentEvent("", "x", "", None)]
    # Two BOMs: only the first is dropped.
    assert parse([BOM + BOM + b"data: y\n\n"]) == []


def test_an_event_cut_off_by_the_end_of_the_body_is_not_dispatched() -> None:
    parser = EventStreamParser()
    assert parser.feed(b"data: one\n\ndata: two\n") == [ServerSentEvent("", "one", "", None)]
    assert parser.feed(b"data: three") == []  # and the body ends here: nothing more comes


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_recorded_streams_one_event_per_piece_or_split_anywhere(path: Path) -> None:
    body = path.read_bytes()
    expected = reference(body)
    assert expected and all(e.data for e in expected)
    events = [part + b"\n\n" for part in body.split(b"\n\n") if part]
    assert parse(events) == expected  # the fast path: one complete event per piece
    for pieces in splits(body, seed=len(body)):
        assert parse(pieces) == expected


def test_a_line_without_an_end_is_limited() -> None:
    parser = EventStreamParser(max_size=1000)
    parser.feed(b"data: " + b"x" * 500)
    with pytest.raises(EventStreamError, match="over 1000 bytes with no end"):
        for _ in range(10):
            parser.feed(b"x" * 100)  # a piece at a time: the limit is on what is buffered


def test_a_long_line_within_the_limit_is_joined_once() -> None:
    pieces = [b"data: "] + [b"x" * 10] * 5000 + [b"\n\n"]
    assert parse(pieces, max_size=60_000) == [ServerSentEvent("", "x" * 50_000, "", None)]


@pytest.mark.parametrize(
    "body",
    [
        b"data: " + b"y" * 1001 + b"\n\n",  # one line, the fast path
        b"data: " + b"y" * 600 + b"\ndata: " + b"y" * 600 + b"\n\n",  # over several lines
    ],
    ids=["one-line", "several-lines"],
)
def test_the_data_of_one_event_is_limited(body: bytes) -> None:
    parser = EventStreamParser(max_size=1000)
    parser.feed(b"data: warm\n\n")
    with pytest.raises(EventStreamError, match="data is over 1000 bytes"):
        parser.feed(body)


LINES = st.sampled_from(
    [
        "data: a",
        "data:b",
        "data",
        "data: {}",
        'data: {"x": "é😀"}',
        "data:  two spaces",
        "event: e",
        "event",
        "id: 1",
        "id",
        "retry: 5",
        "retry: x",
        ": c",
        ":",
        "other: 1",
        "",
        "",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.tuples(LINES, st.sampled_from(["\n", "\r", "\r\n"])), max_size=25),
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_random_streams_under_random_splits(
    lines: list[tuple[str, str]], bom: bool, cuts: list[int]
) -> None:
    body = (BOM if bom else b"") + "".join(line + end for line, end in lines).encode()
    points = sorted({c for c in cuts if 0 < c < len(body)})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert parse(pieces) == reference(body)
