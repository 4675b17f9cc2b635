"""Continuous batching: the next forward pass of every active generation of a model in one round.

A :class:`Scheduler` belongs to one loaded model (``LoadedModel.scheduler``) and serves every
engine over it. It does what an inference server does with its slots:

- **Admission.** At most ``slots`` generations hold a slot at once (on llama.cpp, a sequence of
  the context and its share of the KV cache). A generation that finds them all taken waits in a
  first-in, first-out queue (:meth:`Scheduler.admit`); one that leaves (finished, aborted,
  cancelled, dropped: :meth:`Scheduler.release`) hands its slot to the head of the queue at
  once. A queued generation that is cancelled leaves the queue (:meth:`Scheduler.withdraw`).
- **Rounds.** :meth:`Scheduler.step` is called by each generation's worker thread for its next
  step. The generation's first half (:meth:`~sdk._local._decode.Generation.prepare`: the token
  just picked and any jump-forward drafts, or the prompt) joins the waiting list, and one of the
  waiting threads becomes the round's leader: it runs the forward pass of every waiting
  generation in one call (``ForwardModel.decode_many``: one ``llama_decode`` with a seq id per
  row, a prompt prefilled in pieces between the others' tokens: at most ``PIECE_TOKENS`` a
  round while others write, so they keep their pace),
  then each generation's second half (masks, bans, sampling: ``complete``) on its own logits
  rows, and wakes them. The llguidance masks of the round's first rows are filled together, in
  native threads, before (``_llg_masks.fill_masks``).
- **Gathering.** Generations join and leave between rounds. A round waits briefly for the
  generations of the round before that are still going (each hops back to its event loop with
  its text, then asks for its next step): at most half the last round's time, so a consumer
  that stops reading delays the others once, and is then no longer waited for until it asks
  again.

Per generation nothing changes: each has its own sequence, grammar matcher, bans, drafts,
sampler and seed, and with greedy decoding writes the text it writes alone (llama.cpp's CPU
kernels compute each row of a batch as they compute it alone; ``tests/sdk/local/test_batching``
checks it). On the torch runtime ``decode_many`` runs the round's sequences in one batched
forward pass over a KV store shared by the model's sequences, a prompt to prefill in a pass of
its own (``_torch_forward``; ``tests/sdk/local/test_torch_batching`` checks the texts).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sdk._local._decode import Generation, StepOutput
from sdk._local._forward import ForwardModel
from sdk._local._llg_masks import fill_masks

__all__ = ["Scheduler"]

_GATHER_MIN_S = 0.002
_GATHER_MAX_S = 0.05


class _Need:
    """One generation's step in flight: what it waits for from the rounds."""

    __slots__ = ("before", "done", "error", "generation", "keep", "output")

    def __init__(self, generation: Generation, keep: int, before: int) -> None:
        self.generation = generation
        self.keep = keep
        self.before = before
        """The sequence's length before this step's tokens were appended."""
        self.output: StepOutput | None = None
        self.error: BaseException | None = None
        self.done = False

    def fail(self, error: BaseException) -> None:
        sequence = self.generation.sequence
        if sequence is not None and sequence.length > self.before:
            sequence.truncate(self.before)
        self.generation.fail()
        self.error, self.done = error, True


class Scheduler:
    """The slots, the queue and the rounds of one model (see the module docstring)."""

    def __init__(self, forward: ForwardModel, slots: int) -> None:
        if slots < 1:
            raise ValueError(f"slots must be >= 1, not {slots}")
        self._forward = forward
        self.slots = slots
        """Generations that decode together at most; the others wait in the queue."""
        self._cond = threading.Condition()
        self._holders: set[Generation] = set()
        self._queue: deque[Generation] = deque()
        self._waiting: list[_Need] = []
        self._regulars: set[Generation] = set()
        """Holders expected back for the next round (see the module docstring)."""
        self._leading = False
        self._gather_s = _GATHER_MIN_S
        self.rounds = 0
        """Rounds run so far."""
        self.round_sizes: list[int] = []
        """How many generations each of the last rounds decoded (the latest 1000)."""
        self.overlap_masks = False
        """Fill the round's masks in a helper thread while the pass runs (measured in
        ``tests/benchmarks/bench_local.py --overlap``) instead of just before it."""
        self._helper: ThreadPoolExecutor | None = None

    @property
    def busy(self) -> bool:
        """True while a round runs or a step waits for one."""
        with self._cond:
            return self._leading or bool(self._waiting)

    @property
    def queued(self) -> int:
        """Generations waiting for a slot."""
        with self._cond:
            return len(self._queue)

    @property
    def holders(self) -> int:
        """Generations holding a slot."""
        with self._cond:
            return len(self._holders)

    def admit(self, generation: Generation) -> bool:
        """Block until ``generation`` holds a slot (at once when one is free and nobody is
        queued; else after those queued before it). False when it was withdrawn meanwhile."""
        with self._cond:
            if generation in self._holders:
                return True
            self._queue.append(generation)
            self._grant()
            while generation in self._queue:
                self._cond.wait()
            return generation in self._holders

    def withdraw(self, generation: Generation) -> None:
        """Take ``generation`` out of the queue if it waits there (its :meth:`admit` returns
        False); a generation that holds a slot keeps it."""
        with self._cond:
            if generation in self._queue:
                self._queue.remove(generation)
                self._cond.notify_all()

    def release(self, generation: Generation) -> None:
        """``generation`` is done: out of the queue, or its slot to the next in the queue."""
        with self._cond:
            if generation in self._queue:
                self._queue.remove(generation)
            self._holders.discard(generation)
            self._regulars.discard(generation)
            self._grant()
            self._cond.notify_all()

    def _grant(self) -> None:
        while self._queue and len(self._holders) < self.slots:
            granted = self._queue.popleft()
            self._holders.add(granted)
            self._regulars.add(granted)  # its prompt joins the next round
            self._cond.notify_all()

    def step(self, generation: Generation) -> StepOutput:
        """Run ``generation``'s next step in a round (blocking; admits it first if it holds
        no slot yet) and return what it wrote."""
        if not self.admit(generation):
            raise RuntimeError("the generation was withdrawn from the queue")
        # Drafts where they pay off (see ForwardModel.drafts_in_shared_rounds).
        generation.drafting = self._forward.drafts_in_shared_rounds or self.holders <= 1
        plan = generation.prepare()
        if isinstance(plan, StepOutput):
            return plan
        tokens, keep = plan
        sequence = generation.sequence
        assert sequence is not None
        need = _Need(generation, keep, sequence.length)
        sequence.append(tokens)
        with self._cond:
            self._waiting.append(need)
            self._cond.notify_all()
        while True:
            with self._cond:
                while not need.done and self._leading:
                    self._cond.wait()
                if need.done:
                    break
                self._leading = True
            self._round()
        if need.error is not None:
            raise need.error
        assert need.output is not None
        return need.output

    def _round(self) -> None:
        """Lead one round (the caller set ``_leading``)."""
        members: list[_Need] = []
        try:
            with self._cond:
                self._gather()
                members = list(self._waiting)
            started = time.perf_counter()
            masks = self._masks(members)

            def ready(i: int, rows: Any) -> None:
                # A member whose rows are out goes on at once (a prompt's first token does not
                # wait for the prompts prefilled after it).
                if masks is not None:
                    masks.result()
                self._finish(members[i], rows)
                with self._cond:
                    self._cond.notify_all()

            try:
                results = self._forward.decode_many(
                    [(need.generation.sequence, need.keep) for need in members], ready
                )
            except BaseException as exc:
                for need in members:
                    if not need.done:
                        need.fail(exc)
                raise
            finally:
                if masks is not None:
                    masks.result()
            self._complete(members, results)
            elapsed = time.perf_counter() - started
            self._gather_s = min(_GATHER_MAX_S, max(_GATHER_MIN_S, elapsed / 2))
        except BaseException as exc:
            for need in members:
                if not need.done:
                    need.fail(exc)
        finally:
            with self._cond:
                self.rounds += 1
                self.round_sizes.append(len(members))
                del self.round_sizes[:-1000]
                self._waiting = [need for need in self._waiting if not need.done]
                for need in members:
                    if not need.done:
                        continue
                    output = need.output
                    if output is not None and output.finish_reason is None:
                        self._regulars.add(need.generation)
                    else:
                        self._regulars.discard(need.generation)
                self._leading = False
                self._cond.notify_all()

    def _gather(self) -> None:
        """Wait (holding the condition) for the regulars that have not asked yet, at most
        ``_gather_s``; those that did not come are not waited for again until they ask."""
        deadline = time.perf_counter() + self._gather_s
        while True:
            present = {need.generation for need in self._waiting}
            missing = [g for g in self._regulars if g not in present and g in self._holders]
            if not missing:
                return
            left = deadline - time.perf_counter()
            if left <= 0:
                self._regulars.difference_update(missing)
                return
            self._cond.wait(left)

    def _masks(self, members: list[_Need]) -> Future[None] | None:
        """Fill the llguidance masks of the round's first rows together (they depend on each
        matcher's state only, known before the pass): in a helper thread during the pass when
        ``overlap_masks``, else now. The masks of a prompt still being prefilled wait."""
        constraints = [
            c
            for need in members
            if (c := need.generation.first_row_masked) is not None
            and need.generation.sequence is not None
        ]
        if len(constraints) < 2:
            return None
        if not self.overlap_masks:
            fill_masks(constraints)
            return None
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="fieldstream-masks")
        return self._helper.submit(fill_masks, constraints)

    def _complete(self, members: list[_Need], results: list[Any]) -> None:
        for need, rows in zip(members, results, strict=True):
            if need.done or rows is None:
                continue  # done in the round already, or part of its prompt is left
            if isinstance(rows, BaseException):
                need.fail(rows)
                continue
            self._finish(need, rows)

    def _finish(self, need: _Need, rows: Any) -> None:
        """``need``'s second half on its logits ``rows``: its output, or its error."""
        try:
            output = need.generation.complete(rows)
        except BaseException as exc:
            need.error = exc
        else:
            need.output = output
        with self._cond:
            need.done = True
