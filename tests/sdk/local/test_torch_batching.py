"""Continuous batching on the torch runtime: one forward pass a round for every stream.

The real default model (the suite's torch model: the GGUF converted to safetensors, float32
on the CPU), greedy. The eight different requests of ``test_batching`` run at once through a
backend of 8 slots and each stream must write exactly its text alone; on the forward pass,
the rows of a batched pass match each sequence decoded alone (the same greedy tokens; float32
GEMMs over 8 rows round differently from one row, so the logits agree to about 1e-4, not to
the bit: the figures are in ``docs/local-engine.md``), a stream rewound beside three others
writes what it writes rewound alone, a sequence truncated inside a batch goes on as if it had
never written what it dropped, and a closed sequence's row is taken again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from sdk._backend import GenerationRequest
from sdk._local import LocalBackend, LocalGeneration
from sdk._local._engine import Engine
from sdk._local._torch_forward import TorchForward, TorchSequence
from tests.sdk.local._local_support import all_at_once, deltas_of, text_of, value_start
from tests.sdk.local.test_batching import REQUESTS
from tests.sdk.local.test_rewind_backend import REQUEST as REWOUND
from tests.sdk.local.test_rewind_backend import read_into, read_to_finish

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.torch]

_CLOSE = 1e-3
"""Largest difference allowed between a row decoded in a batch and alone (float32 logits of
magnitude ~10-30; the measured gap is ~1e-4)."""


@pytest.fixture(scope="module")
def batched() -> Iterator[LocalBackend]:
    """The torch model with 8 slots (its weights shared with the suite's torch backend)."""
    backend = LocalBackend(threads=1, runtime="torch", slots=8)
    engine = backend.load()
    assert isinstance(engine.loaded.forward, TorchForward) and engine.loaded.forward.batched
    assert engine.scheduler.slots >= 8
    yield backend


async def test_eight_streams_at_once_write_what_each_writes_alone(batched: LocalBackend) -> None:
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, TorchForward)
    alone_deltas = [await deltas_of(batched, request) for request in REQUESTS]
    passes_before = forward.passes
    forward.batch_sizes.clear()  # it keeps the latest 1000: an index into it would go stale
    together = await all_at_once(batched, REQUESTS)
    assert [text_of(deltas) for deltas in together] == [text_of(d) for d in alone_deltas]
    usage: list[Any] = [deltas[-1].usage for deltas in together]
    # Usage per stream as alone (forced tokens aside: the engine's draft memory learns).
    counts = [(u.prompt_tokens, u.completion_tokens) for u in usage]
    assert counts == [
        (d[-1].usage.prompt_tokens, d[-1].usage.completion_tokens)
        for d in alone_deltas
        if d[-1].usage is not None
    ]
    sizes = list(forward.batch_sizes)
    # They did decode together. How many share one pass depends on timing (a stream whose
    # thread is late for a round waits for the next; the Choice is over in two steps), so at
    # least half of them, and fewer passes than the picks they made (one pass a pick alone).
    assert max(sizes) >= len(REQUESTS) // 2
    picks = sum(u.completion_tokens - u.forced_tokens for u in usage)
    assert forward.passes - passes_before < picks
    assert engine.scheduler.holders == 0 and not engine.busy


async def _rewound(backend: LocalBackend) -> str:
    """Read the second tag's first characters, rewind to its start (banning what was written
    there), read on: the final text."""
    gen = backend.generate(REWOUND)
    assert isinstance(gen, LocalGeneration)
    text = await read_into(gen, ("tags", 1))
    rewound = await gen.rewind(value_start(text, ("tags", 1)))
    rest, _ = await read_to_finish(gen)
    await gen.aclose()
    return text[: rewound.offset] + rest


async def test_a_stream_rewound_in_a_batch_writes_what_it_writes_rewound_alone(
    batched: LocalBackend,
) -> None:
    others = REQUESTS[:3]
    alone = await _rewound(batched)
    others_alone = [text_of(await deltas_of(batched, request)) for request in others]
    texts: dict[str, str] = {}

    async def other(i: int) -> None:
        texts[f"other {i}"] = text_of(await deltas_of(batched, others[i]))

    async def mine() -> None:
        texts["rewound"] = await _rewound(batched)

    async with anyio.create_task_group() as tg:
        for i in range(len(others)):
            tg.start_soon(other, i)
        tg.start_soon(mine)
    assert texts["rewound"] == alone
    assert [texts[f"other {i}"] for i in range(len(others))] == others_alone


def _prompt(engine: Engine, text: str) -> list[int]:
    return engine.prompt_ids(
        GenerationRequest(messages=({"role": "user", "content": text},), schema={})
    )


def _greedy_alone(forward: TorchForward, prompt: list[int], steps: int) -> tuple[list[int], Any]:
    sequence = forward.sequence()
    rows = sequence.decode(prompt, 1)
    tokens, logits = [], []
    for _ in range(steps):
        token = int(rows[-1].argmax())
        tokens.append(token)
        logits.append(rows[-1].clone())
        rows = sequence.decode([token], 1)
    sequence.close()
    return tokens, logits


def test_a_batched_pass_gives_each_row_what_it_gets_alone(batched: LocalBackend) -> None:
    torch = pytest.importorskip("torch")
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, TorchForward)
    prompts = [
        _prompt(engine, text)
        for text in ("Invent a person.", "Count to ten.", "Name a colour.", "Say hi.")
    ]
    steps = 12
    alone = [_greedy_alone(forward, prompt, steps) for prompt in prompts]
    sequences = [forward.sequence() for _ in prompts]
    rows = [s.decode(p, 1) for s, p in zip(sequences, prompts, strict=True)]
    tokens: list[list[int]] = [[] for _ in prompts]
    gap = 0.0
    for step in range(steps):
        for k, sequence in enumerate(sequences):
            token = int(rows[k][-1].argmax())
            tokens[k].append(token)
            gap = max(gap, float((rows[k][-1] - alone[k][1][step]).abs().max()))
            sequence.append([token])
        before = forward.passes
        rows = forward.decode_many([(s, 1) for s in sequences])
        assert forward.passes == before + 1  # one pass for the four of them
    assert tokens == [a[0] for a in alone]
    assert gap < _CLOSE
    # A draft of three tokens beside one-token rows: its three rows are those of decoding them.
    draft = tokens[0][:3]
    check = forward.sequence()
    check.decode(prompts[0], 1)
    expected = check.decode(draft, 3).clone()
    check.close()
    first = forward.sequence()
    first.decode(prompts[0], 1)
    first.append(draft)
    for k in (1, 2):
        sequences[k].append([tokens[k][-1]])
    got = forward.decode_many([(first, 3), (sequences[1], 1), (sequences[2], 1)])
    assert got[0].shape[0] == 3 and got[1].shape[0] == 1
    assert torch.equal(got[0].argmax(-1), expected.argmax(-1))
    assert float((got[0] - expected).abs().max()) < _CLOSE
    first.close()
    for sequence in sequences:
        sequence.close()


def test_a_sequence_truncated_in_a_batch_goes_on_as_if_it_had_not_written(
    batched: LocalBackend,
) -> None:
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, TorchForward)
    prompt, other = _prompt(engine, "Invent a person."), _prompt(engine, "Count to ten.")
    clean, _ = _greedy_alone(forward, prompt, 6)
    mine, theirs = forward.sequence(), forward.sequence()
    rows = [mine.decode(prompt, 1), theirs.decode(other, 1)]
    # Three steps of wrong tokens, then a rewind to the prompt: the row's stale keys are masked.
    for _ in range(3):
        mine.append([0])
        theirs.append([int(rows[1][-1].argmax())])
        rows = forward.decode_many([(mine, 1), (theirs, 1)])
    mine.truncate(len(prompt) - 1)
    assert mine.length == len(prompt) - 1
    mine.append(prompt[-1:])
    written = []
    for _ in range(6):
        theirs.append([int(rows[1][-1].argmax())])
        rows = forward.decode_many([(mine, 1), (theirs, 1)])
        written.append(int(rows[0][-1].argmax()))
        mine.append(written[-1:])
    assert written == clean  # the prompt's last token fed again: its pick, then the rest
    mine.close()
    theirs.close()


def test_a_closed_sequence_gives_its_row_back_at_once(batched: LocalBackend) -> None:
    engine = batched.load()
    forward = engine.loaded.forward
    assert isinstance(forward, TorchForward)
    prompt = _prompt(engine, "Say hi.")
    first = forward.sequence()
    assert isinstance(first, TorchSequence)
    first.decode(prompt, 1)
    row = first._row
    first.close()
    second = forward.sequence()
    assert isinstance(second, TorchSequence)
    expected = _greedy_alone(forward, prompt, 1)[1][0]
    got = second.decode(prompt, 1)
    assert second._row == row  # the lowest free row: the one just given back
    assert float((got[-1] - expected).abs().max()) == 0.0  # nothing of the old owner left
    second.close()
