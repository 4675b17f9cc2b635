"""The local engine's tool-call text read back into tool-call deltas (sans-I/O, no model): the
same calls, names, ids and argument text under every chunking; token counts carried over the
wrapping text; text that leaves the format is a BackendError saying where; the async wrapper
maps the finish and closes the generation on a broken format (asyncio and trio)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from sdk._backend import Delta, Usage
from sdk._errors import BackendError
from sdk._local._tool_calls import LocalToolCalls, ToolCallSplitter, new_call_id
from sdk._local._tools import CALL_END, CALL_SEPARATOR, TOOLS_CLOSE, TOOLS_OPEN, call_begin
from tests.sdk.trackers.test_text import chunkings

NAMES = ["get_weather", "search", "count", "get"]

# Arguments that hold what the wrapping text is made of: braces and quotes in strings,
# escapes, a begin inside a string, nested containers, newlines between tokens.
ARGS = [
    ("get_weather", '{"city": "Paris \\"}\\" {\\"name\\": \\"x\\"", "days": [1, {"a": "}"}]}'),
    ("search", '{\n  "query": "croissant,\\n recipes ]</tool_call>"\n}'),
    ("count", "3"),  # a tool whose arguments are a bare number
    ("get", '"a string"'),  # a name that begins another one's name
    ("get_weather", "{}"),
]


def output_of(calls: list[tuple[str, str]]) -> str:
    body = CALL_SEPARATOR.join(call_begin(name) + args + CALL_END for name, args in calls)
    return TOOLS_OPEN + body + TOOLS_CLOSE


OUTPUT = output_of(ARGS)


def ids() -> Iterator[str]:
    return (f"call_{i}" for i in itertools.count())


def split(pieces: list[str]) -> tuple[list[Delta], ToolCallSplitter]:
    counter = ids()
    splitter = ToolCallSplitter(NAMES, new_id=lambda: next(counter))
    deltas = [d for piece in pieces for d in splitter.feed(piece)]
    return deltas, splitter


def calls_of(deltas: list[Delta]) -> list[tuple[str | None, str | None, str]]:
    """(name, id, argument text) per call, from the deltas."""
    calls: dict[int, list[Any]] = {}
    for d in deltas:
        assert d.tool_call is not None
        if d.tool_call not in calls:
            # A call's first delta names it and gives its id, before any text.
            assert d.text == "" and d.tool_name is not None and d.tool_call_id is not None
            calls[d.tool_call] = [d.tool_name, d.tool_call_id, ""]
        else:
            assert d.tool_name is None and d.tool_call_id is None and d.text
            calls[d.tool_call][2] += d.text
    assert list(calls) == list(range(len(calls)))
    return [tuple(c) for c in calls.values()]  # type: ignore[misc]


@pytest.mark.parametrize("pieces", list(chunkings(OUTPUT, seeds=16)), ids=lambda p: str(len(p)))
def test_every_chunking_gives_the_same_calls(pieces: list[str]) -> None:
    deltas, splitter = split(pieces)
    expected = [(name, f"call_{i}", args) for i, (name, args) in enumerate(ARGS)]
    assert calls_of(deltas) == expected
    assert splitter.done and splitter.calls == len(ARGS)


def test_every_two_piece_split_gives_the_same_calls() -> None:
    expected = calls_of(split([OUTPUT])[0])
    for cut in range(1, len(OUTPUT)):
        assert calls_of(split([OUTPUT[:cut], OUTPUT[cut:]])[0]) == expected, cut


def test_one_call() -> None:
    deltas, splitter = split([output_of([("search", '{"query": "x"}')])])
    assert calls_of(deltas) == [("search", "call_0", '{"query": "x"}')]
    assert splitter.done


def test_an_unfinished_output_is_not_done() -> None:
    text = output_of([("search", '{"query": "x"}')])
    deltas, splitter = split([text[:-3]])
    assert calls_of(deltas) == [("search", "call_0", '{"query": "x"}')]
    assert not splitter.done
    deltas, splitter = split([text[: len(TOOLS_OPEN) + 5]])
    assert deltas == [] and splitter.calls == 0 and not splitter.done


def test_tokens_of_wrapping_text_count_on_the_next_text() -> None:
    splitter = ToolCallSplitter(NAMES)
    assert splitter.feed(TOOLS_OPEN, tokens=3) == []
    (first,) = splitter.feed(call_begin("search"), tokens=6)
    assert first.tool_name == "search" and first.tokens is None
    (text,) = splitter.feed('{"q', tokens=2, forced=True)
    assert (text.text, text.tokens, text.forced) == ('{"q', 11, True)
    (text,) = splitter.feed('uery": "x"}' + CALL_END + CALL_SEPARATOR, tokens=4)
    assert (text.text, text.tokens, text.forced) == ('uery": "x"}', 4, False)
    assert splitter.feed(call_begin("count"), tokens=5) != []
    (text,) = splitter.feed("1", tokens=1)
    assert text.tokens == 6


def test_fresh_ids_are_distinct_and_shaped_like_openai() -> None:
    made = {new_call_id() for _ in range(100)}
    assert len(made) == 100
    assert all(i.startswith("call_") and len(i) == 29 for i in made)
    splitter = ToolCallSplitter(NAMES)
    deltas = splitter.feed(output_of(ARGS[:2]))
    assert len({d.tool_call_id for d in deltas if d.tool_call_id}) == 2


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("Sure! " + OUTPUT, 0),  # prose before the calls
        (TOOLS_OPEN + '{"name": "lookup", "arguments": {}}' + TOOLS_CLOSE, len(TOOLS_OPEN) + 10),
        # a space where the call's end must be
        (TOOLS_OPEN + call_begin("get") + "{} }" + TOOLS_CLOSE, len(TOOLS_OPEN) + 29 + 2),
        (OUTPUT + "\n", len(OUTPUT)),  # anything after the closing line
    ],
)
def test_text_that_leaves_the_format_says_where(text: str, at: int) -> None:
    for pieces in chunkings(text, seeds=4):
        splitter = ToolCallSplitter(NAMES)
        with pytest.raises(BackendError, match=f"at character {at} "):
            for piece in pieces:
                splitter.feed(piece)


def test_a_splitter_needs_a_tool() -> None:
    with pytest.raises(ValueError, match="at least one tool"):
        ToolCallSplitter([])


class FakeGeneration:
    """What LocalToolCalls wraps: deltas of text, then the finish delta."""

    def __init__(self, pieces: list[str], finish: str) -> None:
        self._deltas = [Delta(p, tokens=1) for p in pieces]
        self._deltas.append(Delta(finish_reason=finish, usage=Usage(10, len(pieces))))
        self.closed = False
        self.stats = object()

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self  # type: ignore[return-value]

    async def __anext__(self) -> Delta:
        if self.closed or not self._deltas:
            raise StopAsyncIteration
        return self._deltas.pop(0)

    async def aclose(self) -> None:
        self.closed = True


async def read(gen: LocalToolCalls) -> list[Delta]:
    return [d async for d in gen]


@pytest.mark.anyio
async def test_the_wrapper_gives_tool_call_deltas_and_says_tool_calls() -> None:
    fake = FakeGeneration(list(OUTPUT), "stop")
    gen = LocalToolCalls(fake, NAMES)  # type: ignore[arg-type]
    assert gen.stats is fake.stats
    *body, last = await read(gen)
    assert [(n, a) for n, _, a in calls_of(body)] == ARGS
    assert last == Delta(finish_reason="tool_calls", usage=Usage(10, len(OUTPUT)))
    # Every token was counted on some delta with text, except the closing line's.
    assert sum(d.tokens or 0 for d in body) == len(OUTPUT) - len(CALL_END + TOOLS_CLOSE)


@pytest.mark.anyio
async def test_the_wrapper_keeps_a_length_finish() -> None:
    fake = FakeGeneration(list(OUTPUT[:60]), "length")
    *body, last = await read(LocalToolCalls(fake, NAMES))  # type: ignore[arg-type]
    assert last.finish_reason == "length" and last.usage == Usage(10, 60)
    ((name, _, args),) = calls_of(body)
    assert name == "get_weather" and ARGS[0][1].startswith(args) and args


@pytest.mark.anyio
async def test_the_wrapper_closes_the_generation_on_a_broken_format() -> None:
    fake = FakeGeneration(["Sure! ", OUTPUT], "stop")
    gen = LocalToolCalls(fake, NAMES)  # type: ignore[arg-type]
    with pytest.raises(BackendError, match="at character 0 "):
        await read(gen)
    assert fake.closed
    fake = FakeGeneration([OUTPUT], "stop")
    gen = LocalToolCalls(fake, NAMES)  # type: ignore[arg-type]
    await gen.aclose()
    assert fake.closed
