"""Abort and cancellation stop the decode loop within one step and free the worker thread.

Each step of the loop is one forward pass, counted in ``backend.last_stats.forward_passes``.
"""

from __future__ import annotations

import anyio
import pytest

from sdk._local import LocalBackend
from sdk._local._engine import Engine
from tests.sdk.local._local_support import PERSON, TEXT, beside_others, request_for

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

LONG = request_for("Write a long story about a dragon.", TEXT, max_tokens=40)


async def test_deltas_flow_before_the_generation_ends(local_backend: LocalBackend) -> None:
    seen_passes: list[int] = []
    async for delta in local_backend.generate(LONG):
        stats = local_backend.last_stats
        assert stats is not None
        if delta.text:
            seen_passes.append(stats.forward_passes)
    assert seen_passes[0] < seen_passes[-1]


async def test_aclose_stops_within_one_step(
    local_backend: LocalBackend, engine: Engine, crowd: bool
) -> None:
    async with beside_others(local_backend):  # in a full batch too: the others go on
        gen = local_backend.generate(LONG)
        texts = 0
        async for delta in gen:
            texts += bool(delta.text)
            if texts == 3:
                break
        stats = local_backend.last_stats
        assert stats is not None
        passes = stats.forward_passes
        await gen.aclose()  # type: ignore[attr-defined]
        assert local_backend.active == 0
        # Its slot is free at once: alone nothing runs; beside others, they hold the rest.
        assert engine.scheduler.holders < local_backend.slots if crowd else not engine.busy
        await anyio.sleep(0.3)
        assert stats.forward_passes == passes
        assert stats.completion_tokens < 40


async def test_cancelled_consumer_stops_the_loop_and_frees_the_thread(
    local_backend: LocalBackend, engine: Engine, crowd: bool
) -> None:
    async with beside_others(local_backend):  # in a full batch too: the others go on
        texts = 0
        passes_at_cancel = -1
        with anyio.CancelScope() as scope:
            async for delta in local_backend.generate(LONG):
                texts += bool(delta.text)
                if texts == 2:
                    stats = local_backend.last_stats
                    assert stats is not None
                    passes_at_cancel = stats.forward_passes
                    scope.cancel()
                    # The cancellation lands at the generator's next await: the step it starts
                    # there finishes (torch cannot stop mid-pass), and nothing runs after it.
        assert scope.cancelled_caught
        stats = local_backend.last_stats
        assert stats is not None
        assert passes_at_cancel <= stats.forward_passes <= passes_at_cancel + 1
        assert local_backend.active == 0
        # Its slot is free at once: alone nothing runs; beside others, they hold the rest.
        assert engine.scheduler.holders < local_backend.slots if crowd else not engine.busy
        passes = stats.forward_passes
        await anyio.sleep(0.3)
        assert stats.forward_passes == passes


async def test_cancelling_a_task_blocked_in_a_step(
    local_backend: LocalBackend, engine: Engine
) -> None:
    request = request_for("Invent a person.", PERSON, max_tokens=40)
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async for _ in local_backend.generate(request):
                pass

        tg.start_soon(consume)
        # Wait until the loop is inside a forward pass, then cancel the consumer there.
        # (busy is a worker thread's lock state: there is no event to wait on.)
        while not engine.busy:  # noqa: ASYNC110
            await anyio.sleep(0.001)
        tg.cancel_scope.cancel()
    stats = local_backend.last_stats
    assert stats is not None
    assert stats.completion_tokens < 40
    assert local_backend.active == 0
    assert not engine.busy
    passes = stats.forward_passes
    await anyio.sleep(0.3)
    assert stats.forward_passes == passes


async def test_closed_backend_refuses_new_generations() -> None:
    from sdk._errors import StreamUsageError

    backend = LocalBackend()
    await backend.aclose()
    with pytest.raises(StreamUsageError):
        async for _ in backend.generate(LONG):
            pass
