"""Continuous batching: many generations decode together, each writing what it writes alone.

The real default model on llama.cpp, greedy. A backend with 8 slots runs 8 different requests
(JSON Schemas with jump-forward, free text, a Choice, a Regex, a seeded sample) at once and
each stream must write exactly its text alone; then the slots and the queue: a cancelled
stream frees its slot for a queued one, a cancelled waiter leaves the queue, and the queue is
first in, first out; and on the forward pass, prefix sharing and prefill in pieces.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from sdk import Choice, Regex
from sdk._backend import GenerationRequest
from sdk._local import LocalBackend
from sdk._local._engine import Engine
from sdk._local._llama_cpp import MIN_PIECE, PIECE_TOKENS, ROUND_TOKENS, LlamaCppForward
from tests.sdk.local._local_support import (
    CASES,
    PERSON,
    TEXT,
    all_at_once,
    constrained,
    deltas_of,
    request_for,
    text_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

REQUESTS: list[GenerationRequest] = [
    request_for(CASES["person"][1], PERSON),
    request_for(CASES["nested"][1], CASES["nested"][0]),
    request_for(CASES["array-maxitems"][1], CASES["array-maxitems"][0]),
    request_for("Write a long story about a dragon.", TEXT, max_tokens=40),
    request_for(CASES["flags"][1], CASES["flags"][0]),
    constrained("Is the sky green?", Choice(["yes", "no", "maybe"])),
    constrained("Give a date.", Regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")),
    request_for("Invent a pet.", PERSON, temperature=0.8, seed=7),
]


@pytest.fixture(scope="module")
def batched() -> Iterator[LocalBackend]:
    """The default model in its own context of 8 slots of 1024 tokens (loaded for this
    module)."""
    backend = LocalBackend(threads=1, runtime="llama.cpp", slots=8, context=1024)
    backend.load()
    yield backend


@pytest.fixture(scope="module")
def single() -> Iterator[LocalBackend]:
    """One slot: a second stream waits in the queue."""
    backend = LocalBackend(threads=1, runtime="llama.cpp", slots=1, context=1024)
    backend.load()
    yield backend


async def test_eight_streams_at_once_write_what_each_writes_alone(batched: LocalBackend) -> None:
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    alone = []
    for request in REQUESTS:
        forward.forget()  # cold: nothing cached
        alone.append(text_of(await deltas_of(batched, request)))
    rounds_before = engine.scheduler.rounds
    together = await all_at_once(batched, REQUESTS)
    assert [text_of(deltas) for deltas in together] == alone
    assert all(deltas[-1].finish_reason in ("stop", "length") for deltas in together)
    sizes = engine.scheduler.round_sizes[-(engine.scheduler.rounds - rounds_before) :]
    assert max(sizes) == len(REQUESTS)  # they did decode together
    assert engine.scheduler.holders == 0 and not engine.busy
    # Alone again, the batch's caches left in the slots: what ran before a request does not
    # change what it writes (a cached prefix is reused only as a cold decode computes it).
    again = [text_of(await deltas_of(batched, request)) for request in REQUESTS]
    assert again == alone


async def test_a_cancelled_stream_frees_its_slot_for_a_queued_one(single: LocalBackend) -> None:
    engine: Engine = single.load()
    first = single.generate(REQUESTS[3])
    await first.__anext__()
    assert engine.scheduler.holders == 1
    second_text: list[str] = []

    async def second() -> None:
        second_text.append(text_of(await deltas_of(single, REQUESTS[5])))

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        with anyio.fail_after(30):
            while engine.scheduler.queued == 0:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        assert not second_text  # it waits: the only slot is taken
        await first.aclose()
    assert second_text and second_text[0] in ("yes", "no", "maybe")
    assert engine.scheduler.holders == 0 and engine.scheduler.queued == 0


async def test_a_cancelled_waiter_leaves_the_queue(single: LocalBackend) -> None:
    engine = single.load()
    first = single.generate(REQUESTS[3])
    await first.__anext__()
    with anyio.CancelScope() as scope:
        scope.deadline = anyio.current_time() + 0.5
        await deltas_of(single, REQUESTS[5])
    assert scope.cancelled_caught
    assert engine.scheduler.queued == 0
    assert engine.scheduler.holders == 1
    await first.aclose()
    assert engine.scheduler.holders == 0
    assert text_of(await deltas_of(single, REQUESTS[5])) in ("yes", "no", "maybe")


async def test_the_queue_is_first_in_first_out(single: LocalBackend) -> None:
    engine = single.load()
    first = single.generate(REQUESTS[3])
    await first.__anext__()
    started: list[int] = []

    async def waiter(i: int) -> None:
        gen = single.generate(REQUESTS[5])
        async for delta in gen:
            if delta.text and i not in started:
                started.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(waiter, i)
            with anyio.fail_after(30):
                while engine.scheduler.queued < i + 1:  # noqa: ASYNC110
                    await anyio.sleep(0.005)
        await first.aclose()
    assert started == [0, 1, 2, 3]


def test_a_new_sequence_copies_a_shared_prefix_instead_of_decoding_it(
    batched: LocalBackend,
) -> None:
    np = pytest.importorskip("numpy")
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    system = "You are a careful assistant who answers in JSON. " * 12
    first = _prompt_with(engine, system, "Describe a cat.")
    second = _prompt_with(engine, system, "Describe a dog.")
    shared = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    # Reused: the shared prefix, short of MIN_PIECE tokens of the body decoded again in a
    # large call, as a cold decode computes them (see _reusable).
    reused = min(shared, len(second) - 1 - MIN_PIECE)
    assert reused > 40
    forward.forget()
    alone = forward.sequence()
    cold = alone.decode(second, 1).copy()
    alone.close()
    forward.forget()
    live = forward.sequence()
    live.decode(first, 1)
    copied, decoded = forward.copied_tokens, forward.decoded_tokens
    new = forward.sequence()
    warm = new.decode(second, 1).copy()
    assert forward.copied_tokens - copied == reused  # copied from the live sequence's slot
    assert forward.decoded_tokens - decoded == len(second) - reused
    # The copied prefix was decoded with the other prompt, as a cold decode of this one
    # decodes it (calls of MIN_PIECE rows or more): the same logits to the last bit.
    assert np.array_equal(warm, cold)
    live.close()
    new.close()
    # A retry of a finished request finds its slot as it was left: nothing copied or decoded
    # again but the last token (its logits are asked for), with the same logits as cold.
    copied, decoded = forward.copied_tokens, forward.decoded_tokens
    retry = forward.sequence()
    again = retry.decode(second, 1).copy()
    assert (forward.copied_tokens - copied, forward.decoded_tokens - decoded) == (0, 1)
    assert np.array_equal(again, cold)
    retry.close()


def _prompt_with(engine: Engine, system: str, user: str) -> list[int]:
    request = GenerationRequest(
        messages=({"role": "system", "content": system}, {"role": "user", "content": user}),
        schema=TEXT,
    )
    return engine.prompt_ids(request)


def test_a_long_prompt_is_prefilled_in_pieces_between_the_others_tokens(
    batched: LocalBackend,
) -> None:
    np = pytest.importorskip("numpy")
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    # Two system prompts with nothing in common: no prefix is copied from one to the other
    # (a copied prefix was decoded in a batch of another shape: its last bits may differ).
    long = _prompt_with(
        engine, "Summarize.", "Summarize this. " + "The quick brown fox jumps over it. " * 100
    )
    assert len(long) > ROUND_TOKENS
    forward.forget()
    alone = forward.sequence()
    expected = alone.decode(long, 1).copy()
    alone.close()
    forward.forget()
    short = forward.sequence()
    rows = short.decode(_prompt_with(engine, "Count.", "Count to ten."), 1)
    big = forward.sequence()
    big.append(long)
    rounds = 0
    while True:
        short.append([int(rows[-1].argmax())])
        rows, got = forward.decode_many([(short, 1), (big, 1)])
        rounds += 1
        assert rows is not None  # the short one has its next token every round
        if got is not None:
            break
    assert rounds >= len(long) // ROUND_TOKENS
    assert float(np.abs(got - expected).max()) == 0.0
    short.close()
    big.close()


class _Recording:
    """llama.cpp's binding, recording each ``llama_decode`` call's seq ids in ``events``."""

    def __init__(self, lib: Any, events: list[Any]) -> None:
        self._lib, self.events = lib, events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lib, name)

    def llama_decode(self, ctx: Any, batch: Any) -> Any:
        self.events.append(("decode", [int(batch.seq_id[i][0]) for i in range(batch.n_tokens)]))
        return self._lib.llama_decode(ctx, batch)


def test_each_sequence_is_ready_as_soon_as_its_call_is_decoded(batched: LocalBackend) -> None:
    """A round decodes the streams already writing first, then each prompt in calls of its
    own, and hands each sequence its rows right after its calls: a prompt's first token does
    not wait for the prompts after it."""
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    forward.forget()
    writing = forward.sequence()
    writing.decode(_prompt_with(engine, "", "Say hi."), 1)
    first, second = forward.sequence(), forward.sequence()
    first.append(_prompt_with(engine, "", "Name a fruit."))
    second.append(_prompt_with(engine, "", "Name a colour."))
    writing.append([42])
    lib, events = forward._lib, []
    forward._lib = _Recording(lib, events)
    try:
        forward.decode_many(
            [(second, 1), (writing, 1), (first, 1)],
            lambda i, rows: events.append(("ready", i, rows.shape[0])),
        )
    finally:
        forward._lib = lib
    ids = {s: s._slot.seq_id for s in (writing, first, second) if s._slot}
    for sequence in (writing, first, second):
        sequence.close()
    # (A prompt's call decodes what its slot does not hold: a prefix may have been copied.)
    # (Each prompt's last token in a small call of its own after its body: _reusable.)
    seen = [(e[0], set(e[1])) if e[0] == "decode" else e for e in events]
    assert seen == [
        ("decode", {ids[writing]}),
        ("ready", 1, 1),
        ("decode", {ids[second]}),
        ("decode", {ids[second]}),
        ("ready", 0, 1),
        ("decode", {ids[first]}),
        ("decode", {ids[first]}),
        ("ready", 2, 1),
    ]


def test_prompts_beside_writing_streams_are_prefilled_in_small_pieces_in_queue_order(
    batched: LocalBackend,
) -> None:
    """While a stream is writing, a round prefills one piece of prompt of about
    ``PIECE_TOKENS`` (the stream gets its next token every round, in a call before the piece,
    instead of waiting for up to ``ROUND_TOKENS`` of prompt), the prompt admitted first before
    the next (a prompt's first token waits for the prompts ahead of it and its own, no more),
    and the pieces give each prompt the logits it has decoded whole."""
    np = pytest.importorskip("numpy")
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    filler = "The quick brown fox jumps over the lazy dog. " * 25
    prompts = [
        _prompt_with(engine, "Summarize.", "Summarize this. " + filler),
        _prompt_with(engine, "Translate.", "Translate this into French. " + filler),
    ]
    assert all(len(p) > 3 * PIECE_TOKENS for p in prompts)
    expected = []
    for prompt in prompts:
        forward.forget()
        alone = forward.sequence()
        expected.append(alone.decode(prompt, 1).copy())
        alone.close()
    forward.forget()
    writer = forward.sequence()
    rows = writer.decode(_prompt_with(engine, "Count.", "Count to ten."), 1)
    first, second = forward.sequence(), forward.sequence()
    first.append(prompts[0])
    second.append(prompts[1])
    got: list[Any] = [None, None]
    lib, events = forward._lib, []
    forward._lib = _Recording(lib, events)
    rounds, first_rows = 0, None
    try:
        while got[1] is None:
            writer.append([int(rows[-1].argmax())])
            if first_rows is not None:  # the first prompt is done: it writes too
                first.append([int(first_rows[-1].argmax())])
            out = forward.decode_many([(writer, 1), (first, 1), (second, 1)])
            rounds += 1
            rows = out[0]
            assert rows is not None  # the writing stream has its next token every round
            if first_rows is not None:
                assert out[1] is not None
            elif out[1] is not None:
                got[0] = out[1].copy()
            first_rows = out[1]
            if out[2] is not None:
                got[1] = out[2].copy()
    finally:
        forward._lib = lib
    ids = {s: s._slot.seq_id for s in (writer, first, second) if s._slot}
    for sequence in (writer, first, second):
        sequence.close()
    alone = [e[1] for e in events if set(e[1]) <= {ids[first], ids[second]} and len(set(e[1])) == 1]
    # After its last piece, each prompt's last token in a small call of its own (_reusable).
    assert [call for call in alone if len(call) == 1] == [[ids[first]], [ids[second]]]
    pieces = [call for call in alone if len(call) > 1]
    # Pieces of PIECE_TOKENS, the last one up to 2 * MIN_PIECE - 1 rather than leave a rest
    # under MIN_PIECE (a batch that small is computed by other kernels).
    assert all(MIN_PIECE <= len(piece) < PIECE_TOKENS + MIN_PIECE for piece in pieces)
    owners = [piece[0] for piece in pieces]
    # First-in, first-out: every piece of the first prompt before any of the second.
    assert owners == sorted(owners, key=lambda seq_id: seq_id != ids[first])
    assert sum(len(p) for p in pieces if p[0] == ids[first]) <= len(prompts[0])
    assert rounds >= sum(len(p) for p in prompts) // PIECE_TOKENS
    assert float(np.abs(got[0] - expected[0]).max()) == 0.0
    assert float(np.abs(got[1] - expected[1]).max()) == 0.0


def test_a_round_s_rows_go_to_llama_cpp_in_seq_id_order(batched: LocalBackend) -> None:
    """llama.cpp cuts a batch into micro-batches of consecutive seq ids: the rows are sent in
    seq id order whatever order the round lists them in, and each sequence still gets its own
    logits."""
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    forward.forget()
    prompts = [_prompt_with(engine, "", f"Count to {n}.") for n in (3, 4, 5, 6)]
    sequences = [forward.sequence() for _ in prompts]
    firsts = [int(s.decode(p, 1)[-1].argmax()) for s, p in zip(sequences, prompts, strict=True)]
    alone = []
    for prompt, first in zip(prompts, firsts, strict=True):
        single = forward.sequence()
        single.decode(prompt, 1)
        alone.append(int(single.decode([first], 1)[-1].argmax()))
        single.close()
    lib, events = forward._lib, []
    forward._lib = _Recording(lib, events)
    try:
        for sequence, first in zip(sequences, firsts, strict=True):
            sequence.append([first])
        rows = forward.decode_many([(s, 1) for s in reversed(sequences)])
    finally:
        forward._lib = lib
    assert len(events) == 1
    sent = events[0][1]
    assert sent == sorted(sent) and len(set(sent)) == 4
    assert [int(r[-1].argmax()) for r in reversed(rows)] == alone
    for sequence in sequences:
        sequence.close()


def test_new_sequences_take_the_lowest_free_seq_ids(batched: LocalBackend) -> None:
    """Slots freed in the middle are taken again before unused ones: the live sequences keep
    consecutive seq ids (one micro-batch), unless a slot holds a clearly longer prefix."""
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, LlamaCppForward)
    forward.forget()
    held = [s.seq_id for s in forward._slots if s.owner is not None]
    assert not held, held
    live = [forward.sequence() for _ in range(4)]
    for i, sequence in enumerate(live):
        sequence.decode([1000 + 10 * i + j for j in range(8)], 1)  # no prefix in common
    assert sorted(s._slot.seq_id for s in live if s._slot) == [0, 1, 2, 3]
    live[1].close()
    live[2].close()
    fresh = [forward.sequence(), forward.sequence()]
    for i, sequence in enumerate(fresh):
        sequence.decode([2000 + 10 * i + j for j in range(8)], 1)
    ids = sorted(s._slot.seq_id for s in (live[0], live[3], *fresh) if s._slot)
    assert ids == [0, 1, 2, 3]
    # A retry whose own slot would leave a gap takes the slot that fills it, and copies its
    # prompt's cached prefix from its own slot instead of decoding it again.
    prompt = [3000 + j for j in range(40)]
    first = forward.sequence()
    first.decode(prompt, 1)
    own = first._slot
    assert own is not None and own.seq_id == 4
    first.close()
    fresh[0].close()  # seq id 1 is free now: live 0, 2, 3
    copied, decoded = forward.copied_tokens, forward.decoded_tokens
    retry = forward.sequence()
    retry.decode([*prompt, 5, 6], 1)
    assert retry._slot is not None and retry._slot.seq_id == 1
    assert (forward.copied_tokens - copied, forward.decoded_tokens - decoded) == (40, 2)
    for sequence in (live[0], live[3], fresh[1], retry):
        sequence.close()


async def test_drafts_wait_while_other_generations_share_the_round(batched: LocalBackend) -> None:
    """On llama.cpp a shared round decodes a sequence's drafts in micro-batches of their own,
    which cost more than the passes they save: two generations at once propose none (the text
    is the same)."""
    request = REQUESTS[1]  # a nested schema: keys and punctuation to jump over
    alone = await deltas_of(batched, request)
    forced_alone = alone[-1].usage.forced_tokens if alone[-1].usage else 0
    assert forced_alone > 0
    together = await all_at_once(batched, [request, request])
    for deltas in together:
        assert text_of(deltas) == text_of(alone)
    forced = [d[-1].usage.forced_tokens if d[-1].usage else 0 for d in together]
    assert sum(forced) < forced_alone, forced
