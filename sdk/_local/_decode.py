"""The decoding loop: one forward pass per step over the KV cache, masks, jump-forward.

Jump-forward, and why it cannot change the output. When the grammar alone decides the next
characters (``Constraint.forced_text``), the loop turns them into *draft* tokens (the pieces
the model wrote the same text in last time, else the canonical split: see ``_drafts``) and feeds
those draft tokens to the model in the same forward pass as the token just chosen. The forward
pass returns logits for every draft position, and the loop then picks each next token exactly as
plain decoding would (mask, then the sampler) and compares: while the pick equals the draft, the
draft token is confirmed (``forced``) at no extra forward pass; at the first difference the pick
wins, the unconfirmed drafts are cropped from the KV cache, and decoding goes on from the pick.
This is speculative decoding with the grammar as the draft model. Greedy decoding therefore
writes the same tokens with jump-forward on or off (up to floating-point differences between a
one-token and a several-token forward pass), and seeded sampling too, because the sampler
draws one random number per token either way. The gain is forward passes: a run of k forced
tokens costs one pass instead of k.

A :class:`Generation` runs one forward pass per :meth:`~Generation.step` and returns a
:class:`StepOutput` (iterating it steps until the last one), so a caller that stops asking
stops the loop within one step; it holds no thread. A step is two halves around the forward
pass, :meth:`~Generation.prepare` (what to decode) and :meth:`~Generation.complete` (mask and
sample the logits), so that ``_scheduler`` can decode the next tokens of many generations in one
pass.

Rewinding. A generation keeps every token it wrote with the character and byte offsets where
it ends (``_output``). :meth:`Generation.rewind` cuts the output back to the last token boundary
at or before a character offset: the KV cache is cropped, the grammar matcher rolled back by as
many tokens (xgrammar keeps the history), the UTF-8 decoder and the draft recorder start afresh,
and the next step feeds the last kept token again for the logits after it. Unless asked not to,
it bans the text from the boundary to the end of the token holding the value's first choice
(``_choice``, ``_bans``): forced or structural characters are never the choice, and a token
straddling the offset is banned with the content after it, never alone. Bans are masks like the
grammar's, so jump-forward writes the same text as plain decoding after a rewind too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sdk._backend import LENGTH, STOP, Rewound
from sdk._errors import StreamUsageError
from sdk._local._bans import Bans, RewindExhausted, VocabIndex, forbidden_tokens
from sdk._local._choice import banned_bytes
from sdk._local._deps import require
from sdk._local._drafts import DraftMemory, DraftRecorder
from sdk._local._forward import ForwardPass
from sdk._local._llg_masks import LlgConstraint
from sdk._local._output import Output
from sdk._local._sampling import NumpySampler, Sampler
from sdk._local._xgr_masks import Constraint

__all__ = ["DecodeStats", "Generation", "Piece", "StepOutput"]


@dataclass(frozen=True, slots=True)
class Piece:
    """One generated token and the text it completes."""

    token_id: int
    """The token id (-1 for the flush of an incomplete UTF-8 sequence at the end)."""
    text: str
    """The text this token completes (empty while a multi-byte character is incomplete)."""
    forced: bool
    """True when the grammar forced this token (a confirmed jump-forward draft)."""


@dataclass(frozen=True, slots=True)
class StepOutput:
    """What one step of a generation wrote: confirmed forced tokens, then the model's own
    pick."""

    pieces: tuple[Piece, ...]
    """The tokens, in order (empty when the first pick was a stop token)."""
    finish_reason: str | None = None
    """``"stop"`` or ``"length"`` on the last batch, else None."""


@dataclass(slots=True)
class DecodeStats:
    """Counters of one generation, updated as it runs (read them any time)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens generated (the stop token excluded), those dropped by rewinds included."""
    forced_tokens: int = 0
    """Of those, tokens confirmed from jump-forward drafts."""
    rewinds: int = 0
    """Rewinds of this generation."""
    rewound_tokens: int = 0
    """Tokens the rewinds dropped (counted in ``completion_tokens`` too)."""
    forward_passes: int = 0
    """Forward passes run, the prompt's included."""
    drafted_tokens: int = 0
    """Draft tokens fed to the model (confirmed or not)."""
    remembered_tokens: int = 0
    """Of those, tokens drafted from the draft memory rather than the canonical split."""
    forward_s: float = 0.0
    """Seconds in the model's forward passes (prefill included)."""
    prefill_s: float = 0.0
    """Seconds in the first forward pass (the prompt)."""
    mask_s: float = 0.0
    """Seconds filling and applying grammar masks."""
    sample_s: float = 0.0
    """Seconds picking tokens."""


_MAX_DRAFT = 32
"""The most draft tokens one forward pass feeds."""


class Generation:
    """One generation: a sequence, grammar matcher, sampler and output, one forward pass a step.

    ``sequence`` is a fresh :class:`~sdk._local._forward.ForwardPass` (the model's forward pass
    and KV cache); the generation owns it and closes it with :meth:`close`.

    With a ``constraint`` every token obeys its grammar and the generation stops when the
    grammar has accepted a stop token; without one it stops at any of ``stop_ids``. ``max_tokens``
    bounds the output (the tokens kept after rewinds), not the work: usage counts every token.
    Iterating it yields the batches up to the last one, which carries ``finish_reason``.
    Not thread-safe: one caller at a time (the engine serializes steps).

    ``verify_drafts=False`` trusts the drafts blindly (the classic jump-forward of SGLang): it
    exists to measure what verification buys, and can change the output (and ignores bans).

    ``draft_memory`` is where the drafts remember how the model wrote each forced text (an
    engine shares one between its generations); None uses a fresh one for this generation.
    It changes how many forward passes run, not what is written. ``text_output``: the output
    is text (a Choice, Regex or Grammar), not a JSON value, for what a rewind bans (``_choice``).
    """

    def __init__(
        self,
        sequence: ForwardPass,
        prompt_ids: Sequence[int],
        *,
        sampler: Sampler | NumpySampler,
        decoded_vocab: Sequence[bytes],
        stop_ids: Collection[int],
        max_tokens: int,
        constraint: Constraint | LlgConstraint | None = None,
        jump_forward: bool = True,
        stats: DecodeStats | None = None,
        verify_drafts: bool = True,
        draft_memory: DraftMemory | None = None,
        vocab_index: VocabIndex | None = None,
        text_output: bool = False,
    ) -> None:
        if not prompt_ids:
            raise ValueError("the prompt has no tokens")
        self._sequence: ForwardPass | None = sequence
        self._prompt = list(prompt_ids)
        self._sampler = sampler
        self._vocab = decoded_vocab
        self._stop_ids = stop_ids
        self.max_tokens = max_tokens
        self._constraint = constraint
        self._verify = verify_drafts
        self._text_output = text_output
        self.stats = stats if stats is not None else DecodeStats()
        self.stats.prompt_tokens = len(self._prompt)
        self._recorder = (
            DraftRecorder(
                draft_memory if draft_memory is not None else DraftMemory(), decoded_vocab
            )
            if jump_forward and constraint is not None
            else None
        )
        self._feed: list[int] = list(self._prompt)
        # How many draft tokens the next pass may feed. A rejected draft costs compute for
        # nothing, and a model that writes the forced text in other pieces than the tokenizer's
        # (small models under a compact grammar spell keys in fragments) rejects draft after
        # draft: after a rejection at position j the next draft is at most j + 1 tokens; a fully
        # confirmed draft doubles the limit again.
        self._draft_limit = _MAX_DRAFT
        self.drafting = True
        """Whether the next step may propose jump-forward drafts (the scheduler turns it off
        while the step shares its round with other generations on llama.cpp)."""
        self.output = Output()
        """The tokens written so far and their text (read it between steps)."""
        self._accepted = 0
        """Tokens the matcher has accepted: the output's, and the stop token once accepted."""
        self._bans = Bans()
        self.vocab_index = vocab_index
        """Serves the rewind bans; built from ``decoded_vocab`` when first needed if None."""
        self.finish_reason: str | None = None
        """``"stop"`` or ``"length"`` once the last batch is out (None again after a rewind)."""
        self._closed = False
        self._broken = False
        self._drafts: list[int] = []
        """The drafts of the step in flight (between prepare and complete)."""
        self._started = 0.0

    def __iter__(self) -> Iterator[StepOutput]:
        return self

    def __next__(self) -> StepOutput:
        if self._closed or self.finish_reason is not None:
            raise StopIteration
        return self.step()

    @property
    def text(self) -> str:
        """The output so far."""
        return self.output.text

    def close(self) -> None:
        """Release the KV cache; the generation can neither step nor rewind any more."""
        self._closed = True
        if self._sequence is not None:
            self._sequence.close()
            self._sequence = None

    @property
    def sequence(self) -> ForwardPass | None:
        """The sequence the generation decodes on (None once closed)."""
        return self._sequence

    def step(self) -> StepOutput:
        """Run one forward pass; return the tokens it wrote (the last output has a finish)."""
        plan = self.prepare()
        if isinstance(plan, StepOutput):
            return plan
        tokens, keep = plan
        assert self._sequence is not None
        try:
            rows = self._sequence.decode(tokens, keep)
        except BaseException:
            self.fail()
            raise
        return self.complete(rows)

    def prepare(self) -> StepOutput | tuple[list[int], int]:
        """The first half of a step: what the next forward pass must decode (the tokens to
        append to :attr:`sequence` and how many logits rows to keep), or the last output when
        the step needs no pass (``max_tokens`` reached). The caller decodes the tokens (alone,
        or in one round with other generations' tokens: ``_scheduler``) and hands the rows to
        :meth:`complete`, or calls :meth:`fail` when the pass failed."""
        if self._closed:
            raise StreamUsageError("this generation is closed")
        if self.finish_reason is not None:
            raise StreamUsageError("this generation is over (rewind it to go on)")
        if self._broken:
            raise StreamUsageError("a step of this generation failed (rewind it to go on)")
        try:
            return self._prepare()
        except BaseException:
            self.fail()
            raise

    def fail(self) -> None:
        """Mark the step in flight failed: half a step ran (the cache may hold a position the
        output does not), and only a rewind, which crops to an absolute length, makes the state
        whole again."""
        self._broken = True

    def _prepare(self) -> StepOutput | tuple[list[int], int]:
        stats, output = self.stats, self.output
        if len(output) >= self.max_tokens:
            return self._finish([], LENGTH)
        constraint, recorder = self._constraint, self._recorder
        drafts: list[int] = []
        if recorder is not None and self.drafting:
            assert constraint is not None
            # The last slot of the budget goes to the model's own pick after the drafts.
            drafts = recorder.propose(constraint.forced_text(), constraint.canonical_tokens)[
                : min(self._draft_limit, max(0, self.max_tokens - len(output) - 1))
            ]
            if recorder.from_memory:
                stats.remembered_tokens += len(drafts)
        stats.drafted_tokens += len(drafts)
        self._drafts = drafts
        self._started = time.perf_counter()
        return self._feed + drafts, len(drafts) + 1

    @property
    def first_row_masked(self) -> LlgConstraint | None:
        """The llguidance constraint whose mask for the first row of the next :meth:`complete`
        may be filled ahead, with other generations' in one call (``_llg_masks.fill_masks``),
        or None (no constraint, or xgrammar's)."""
        constraint = self._constraint
        return constraint if isinstance(constraint, LlgConstraint) else None

    def complete(self, rows: Any) -> StepOutput:
        """The second half of a step (see :meth:`prepare`): mask and sample ``rows``, the
        logits the pass returned; the tokens written."""
        try:
            return self._complete(rows)
        except BaseException:
            self.fail()
            raise

    def _complete(self, rows: Any) -> StepOutput:
        stats, output = self.stats, self.output
        constraint, recorder, drafts = self._constraint, self._recorder, self._drafts
        sequence = self._sequence
        assert sequence is not None
        elapsed = time.perf_counter() - self._started
        if stats.forward_passes == 0:
            stats.prefill_s = elapsed
        stats.forward_passes += 1
        stats.forward_s += elapsed

        pieces: list[Piece] = []
        for i in range(len(drafts) + 1):
            if len(output) >= self.max_tokens:
                return self._finish(pieces, LENGTH)
            if not self._verify and i < len(drafts):
                assert constraint is not None and recorder is not None
                token = drafts[i]
                self._accept(token)
                recorder.emitted(token)
                pieces.append(self._emit(token, True))
                continue
            logits = rows[i : i + 1]
            if constraint is not None:
                started = time.perf_counter()
                constraint.mask(logits)
                stats.mask_s += time.perf_counter() - started
            if len(self._bans):
                self._apply_bans(logits)
            started = time.perf_counter()
            token = self._sampler.pick(logits)
            stats.sample_s += time.perf_counter() - started
            self._accept(token)
            if token in self._stop_ids:
                return self._finish(pieces, STOP)
            if recorder is not None:
                recorder.emitted(token)
            forced = i < len(drafts) and token == drafts[i]
            pieces.append(self._emit(token, forced))
            if not forced:
                # The model's own pick: drafts after it are stale, in the cache too.
                if i < len(drafts):
                    self._draft_limit = i + 1
                elif drafts:
                    self._draft_limit = min(2 * self._draft_limit, _MAX_DRAFT)
                sequence.truncate(sequence.length - (len(drafts) - i))
                self._feed = [token]
                break
        return StepOutput(tuple(pieces))

    def _accept(self, token: int) -> None:
        if self._constraint is not None:
            self._constraint.accept(token)
            self._accepted += 1

    def _emit(self, token: int, forced: bool) -> Piece:
        self.stats.completion_tokens += 1
        self.stats.forced_tokens += forced
        return Piece(token, self.output.append(token, self._vocab[token]), forced)

    def _finish(self, pieces: list[Piece], reason: str) -> StepOutput:
        tail = self.output.flush()
        if tail:
            pieces.append(Piece(-1, tail, False))
        self.finish_reason = reason
        return StepOutput(tuple(pieces), reason)

    def _apply_bans(self, logits: Any) -> None:
        if self.vocab_index is None:
            self.vocab_index = VocabIndex(self._vocab)
        rests = self._bans.rests(self.output.data)
        if not rests:
            return
        constraint = self._constraint
        forces = constraint.forces if constraint is not None else None
        banned = forbidden_tokens(rests, self.vocab_index, forces)
        if not banned:
            return
        if _ban(logits, banned):
            raise RewindExhausted(
                f"no token is left at character {self.output.chars} of the output: every "
                "continuation the grammar allows there was ruled out by rewinds",
                offset=self.output.chars,
            )

    def rewind(self, offset: int, *, ban: bool = True) -> Rewound:
        """Cut the output back to character ``offset`` (to the last token boundary at or
        before it) and, with ``ban``, rule out the continuation written there.

        Works between steps and after the last one (the generation then goes on). See the
        module docstring for what is banned; raises ValueError for an offset outside the
        output, StreamUsageError once closed.
        """
        if self._closed:
            raise StreamUsageError("this generation is closed")
        output = self.output
        if not 0 <= offset <= output.chars:
            raise ValueError(
                f"cannot rewind to character {offset}: the output has {output.chars} characters"
            )
        keep = output.boundary(offset)
        dropped = len(output) - keep
        start = output.byte_end(keep)
        if self._constraint is not None and self._accepted > keep:
            self._constraint.rollback(self._accepted - keep)
        self._accepted = keep
        banned = None
        if ban:
            constraint = self._constraint
            forced_after = (lambda t: constraint.forced_after(t).encode()) if constraint else None
            banned = banned_bytes(output, start, offset, forced_after, text=self._text_output)
        # Bans after the boundary belonged to text being rewritten; those at it or before stay.
        self._bans.keep_until(start)
        if banned:
            self._bans.add(start, banned)
        output.truncate(keep)
        # The next pass feeds the last kept token again: its logits are the next position's.
        assert self._sequence is not None
        self._sequence.truncate(len(self._prompt) + keep - 1)
        self._feed = [output.tokens[-1] if keep else self._prompt[-1]]
        if self._recorder is not None:
            self._recorder.reset()
        self._draft_limit = _MAX_DRAFT
        self.finish_reason = None
        self._broken = False
        self.stats.rewinds += 1
        self.stats.rewound_tokens += dropped
        return Rewound(
            offset=output.chars,
            requested=offset,
            dropped_tokens=dropped,
            banned=banned.decode("utf-8", "replace") if banned else None,
        )


def _ban(logits: Any, banned: list[int]) -> bool:
    """Set ``banned`` to -inf in ``logits`` (1 x V, numpy or torch); True when no token is left."""
    np = sys.modules.get("numpy")  # imported already when the logits are numpy's
    if np is not None and isinstance(logits, np.ndarray):
        logits[0, banned] = -np.inf
        return bool(np.isneginf(logits).all())
    torch = require("torch")  # a torch tensor: an inference tensor, written in that mode
    with torch.inference_mode():
        logits[0, banned] = float("-inf")
        return bool(torch.isneginf(logits).all())
