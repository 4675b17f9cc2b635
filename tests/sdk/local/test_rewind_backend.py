"""The rewind seam of ``LocalBackend``: ``await gen.rewind(offset)`` between deltas, then the
deltas of the new text; closing, usage and misuse (on asyncio and trio)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import pytest

from sdk._backend import Delta, Rewindable
from sdk._errors import StreamUsageError
from sdk._local import LocalBackend, LocalGeneration
from sdk._local._bans import RewindExhausted
from sdk._local._engine import Engine
from tests.sdk.local._local_support import (
    ENUM,
    TAGS4,
    alone_first,
    as_alone,
    beside_others,
    find_value,
    request_for,
    value_start,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

REQUEST = request_for("List four tags for a blog post about cooking.", TAGS4, max_tokens=64)


async def read_into(gen: LocalGeneration, path: tuple[str | int, ...], chars: int = 3) -> str:
    """Read deltas until the value at ``path`` has begun and ``chars`` more characters came;
    return the text read."""
    text = ""
    async for delta in gen:
        text += delta.text
        at = find_value(text, path)
        if at is not None and len(text) >= at + chars:
            return text
    raise AssertionError(f"no value at {path}: {text!r}")


async def read_to_finish(gen: LocalGeneration) -> tuple[str, Delta]:
    """Read up to the finish delta (and no further); return the text and that delta."""
    text = ""
    async for delta in gen:
        text += delta.text
        if delta.finish_reason is not None:
            return text, delta
    raise AssertionError("no finish delta")


async def rewind_second_tag(backend: LocalBackend) -> tuple[LocalGeneration, str, Any, Delta]:
    """:data:`REQUEST` rewound once, inside its second tag: the generation, the final text, the
    rewind's outcome and the finish delta."""
    gen = backend.generate(REQUEST)
    assert isinstance(gen, Rewindable)
    # Read until the second item has begun and written a few characters.
    text = await read_into(gen, ("tags", 1))
    at = value_start(text, ("tags", 1))
    rewound = await gen.rewind(at)
    assert rewound.offset <= at and rewound.banned is not None
    rest, last = await read_to_finish(gen)
    final = text[: rewound.offset] + rest
    assert not final[rewound.offset :].startswith(rewound.banned)
    return gen, final, rewound, last


@pytest.mark.usefixtures("crowd")  # the same rewind, ban and text in a full batch
async def test_a_rewind_between_deltas_resumes_the_stream(local_backend: LocalBackend) -> None:
    async def alone() -> str:
        gen, text, _, _ = await rewind_second_tag(local_backend)
        await gen.aclose()
        return text

    await alone_first(local_backend, "rewind the second tag", alone)
    async with beside_others(local_backend):
        gen, final, rewound, last = await rewind_second_tag(local_backend)
        jsonschema.validate(json.loads(final), TAGS4)
        assert last.finish_reason == "stop" and last.usage is not None
        # Usage counts every token decoded, those the rewind dropped included.
        assert gen.stats.rewinds == 1
        assert gen.stats.rewound_tokens == rewound.dropped_tokens > 0
        assert last.usage.completion_tokens == gen.stats.completion_tokens
        assert last.usage.completion_tokens > rewound.dropped_tokens
        await gen.aclose()
        assert local_backend.active == 0
    as_alone(local_backend, "rewind the second tag", final)


async def test_a_finished_generation_can_be_rewound_before_asking_for_more(
    local_backend: LocalBackend,
) -> None:
    gen = local_backend.generate(REQUEST)
    first, last = await read_to_finish(gen)
    assert local_backend.active == 0  # finished: no longer counted as active
    rewound = await gen.rewind(value_start(first, ("tags", 1)))
    assert local_backend.active == 1  # going on again
    rest, again = await read_to_finish(gen)
    final = first[: rewound.offset] + rest
    jsonschema.validate(json.loads(final), TAGS4)
    assert final != first
    assert last.usage is not None and again.usage is not None
    assert again.usage.completion_tokens > last.usage.completion_tokens
    # Asking for more after the finish ends it: no rewind after that.
    with pytest.raises(StopAsyncIteration):
        await gen.__anext__()
    assert local_backend.active == 0
    with pytest.raises(StreamUsageError, match="closed"):
        await gen.rewind(0)


async def test_closing_a_resumed_generation_stops_it(
    local_backend: LocalBackend, engine: Engine
) -> None:
    gen = local_backend.generate(REQUEST)
    text = await read_into(gen, ("tags", 1))
    await gen.rewind(value_start(text, ("tags", 1)))
    delta = await gen.__anext__()
    assert delta.text
    passes = gen.stats.forward_passes
    await gen.aclose()
    assert local_backend.active == 0
    assert not engine.busy
    await anyio.sleep(0.3)
    assert gen.stats.forward_passes == passes
    with pytest.raises(StopAsyncIteration):
        await gen.__anext__()
    with pytest.raises(StreamUsageError, match="closed"):
        await gen.rewind(0)


@pytest.mark.usefixtures("crowd")
async def test_rewind_misuse_is_refused(local_backend: LocalBackend) -> None:
    async with beside_others(local_backend):
        await _misuse(local_backend)


async def _misuse(local_backend: LocalBackend) -> None:
    gen = local_backend.generate(REQUEST)
    with pytest.raises(StreamUsageError, match="nothing was generated"):
        await gen.rewind(0)
    text = (await gen.__anext__()).text
    # Only text the consumer has seen can be rewound to.
    with pytest.raises(ValueError, match="characters were yielded"):
        await gen.rewind(len(text) + 1)
    rewound = await gen.rewind(0, ban=False)
    assert rewound.offset == 0 and rewound.banned is None
    rest, _ = await read_to_finish(gen)
    jsonschema.validate(json.loads(rest), TAGS4)
    await gen.aclose()


@pytest.mark.usefixtures("crowd")  # every value banned in turn, in a full batch too
async def test_running_out_of_values_ends_the_generation(local_backend: LocalBackend) -> None:
    async with beside_others(local_backend):
        await _run_out_of_values(local_backend)


async def _run_out_of_values(local_backend: LocalBackend) -> None:
    gen = local_backend.generate(request_for("How do you feel today?", ENUM, max_tokens=24))
    text, _ = await read_to_finish(gen)
    at = value_start(text, ("mood",))
    with pytest.raises(RewindExhausted):
        for _ in range(len(ENUM["properties"]["mood"]["enum"])):
            rewound = await gen.rewind(at)
            rest, _ = await read_to_finish(gen)
            text = text[: rewound.offset] + rest
            jsonschema.validate(json.loads(text), ENUM)
    assert local_backend.active == 0
    with pytest.raises(StreamUsageError, match="closed"):
        await gen.rewind(at)
