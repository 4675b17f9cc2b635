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

The loop is a plain generator that yields one :class:`Batch` per forward pass, so a caller
that stops pulling stops the loop within one step.
"""

from __future__ import annotations

import codecs
import inspect
import time
from collections.abc import Collection, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from sdk._local._deps import require
from sdk._local._drafts import DraftMemory, DraftRecorder
from sdk._local._grammar import Constraint
from sdk._local._sampling import Sampler

__all__ = ["Batch", "DecodeStats", "Piece", "decode"]


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
class Batch:
    """What one forward pass produced: confirmed forced tokens, then the model's own pick."""

    pieces: tuple[Piece, ...]
    """The tokens, in order (empty when the first pick was a stop token)."""
    finish_reason: str | None = None
    """``"stop"`` or ``"length"`` on the last batch, else None."""


@dataclass(slots=True)
class DecodeStats:
    """Counters of one generation, updated as it runs (read them any time)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    """Tokens generated (the stop token excluded)."""
    forced_tokens: int = 0
    """Of those, tokens confirmed from jump-forward drafts."""
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


def _cache_kwarg(model: Any) -> str:
    """The name the model's forward takes the KV cache by: ``cache`` in transformers >= 5.2x,
    ``past_key_values`` before (passing the old name now warns)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _crop(cache: Any, remove: int) -> None:
    """Drop the last ``remove`` positions of the KV cache.

    ``crop(-n)`` means "remove n" in transformers 5 and "keep all but n" in 4.x: the same.
    """
    if remove > 0:
        cache.crop(-remove)


def decode(
    model: Any,
    prompt_ids: Sequence[int],
    *,
    sampler: Sampler,
    decoded_vocab: Sequence[bytes],
    stop_ids: Collection[int],
    max_tokens: int,
    constraint: Constraint | None = None,
    jump_forward: bool = True,
    stats: DecodeStats | None = None,
    verify_drafts: bool = True,
    draft_memory: DraftMemory | None = None,
) -> Generator[Batch, None, None]:
    """Generate up to ``max_tokens`` tokens after ``prompt_ids``; yield a Batch per forward pass.

    With a ``constraint`` every token obeys its grammar and the generation stops when the
    grammar has accepted a stop token; without one it stops at any of ``stop_ids``. The last
    batch carries ``finish_reason``. Closing the generator stops it; it holds no thread.

    ``verify_drafts=False`` trusts the drafts blindly (the classic jump-forward of SGLang): it
    exists to measure what verification buys, and can change the output.

    ``draft_memory`` is where the drafts remember how the model wrote each forced text (an
    engine shares one between its generations); None uses a fresh one for this generation.
    It changes how many forward passes run, not what is written.
    """
    torch = require("torch")
    stats = stats if stats is not None else DecodeStats()
    stats.prompt_tokens = len(prompt_ids)
    device = model.device
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    recorder = (
        DraftRecorder(draft_memory if draft_memory is not None else DraftMemory(), decoded_vocab)
        if jump_forward and constraint is not None
        else None
    )
    transformers = require("transformers")
    # Our own cache object, updated in place by every forward pass (and cropped by us).
    cache: Any = transformers.DynamicCache(config=model.config)
    cache_kwarg = _cache_kwarg(model)
    feed: list[int] = list(prompt_ids)
    emitted = 0
    # How many draft tokens the next pass may feed. A rejected draft costs compute for nothing,
    # and a model that writes the forced text in other pieces than the tokenizer's (small models
    # under a compact grammar spell keys in fragments) rejects draft after draft: after a
    # rejection at position j the next draft is at most j + 1 tokens; a fully confirmed draft
    # doubles the limit again.
    draft_limit = _MAX_DRAFT
    if max_tokens <= 0:
        yield Batch((), "length")
        return
    while True:
        drafts: list[int] = []
        if recorder is not None:
            assert constraint is not None
            # The last slot of the budget goes to the model's own pick after the drafts.
            drafts = recorder.propose(constraint.forced_text(), constraint.canonical_tokens)[
                : min(draft_limit, max(0, max_tokens - emitted - 1))
            ]
            if recorder.from_memory:
                stats.remembered_tokens += len(drafts)
        stats.drafted_tokens += len(drafts)
        started = time.perf_counter()
        with torch.inference_mode():
            out = model(
                input_ids=torch.tensor([feed + drafts], device=device),
                use_cache=True,
                logits_to_keep=len(drafts) + 1,
                **{cache_kwarg: cache},
            )
        rows = out.logits[0]
        elapsed = time.perf_counter() - started
        if stats.forward_passes == 0:
            stats.prefill_s = elapsed
        stats.forward_passes += 1
        stats.forward_s += elapsed

        pieces: list[Piece] = []
        finish: str | None = None
        for i in range(len(drafts) + 1):
            if emitted >= max_tokens:
                finish = "length"
                break
            if not verify_drafts and i < len(drafts):
                assert constraint is not None and recorder is not None
                token = drafts[i]
                constraint.accept(token)
                recorder.emitted(token)
                emitted += 1
                stats.completion_tokens += 1
                stats.forced_tokens += 1
                pieces.append(Piece(token, utf8.decode(decoded_vocab[token]), True))
                continue
            logits = rows[i : i + 1]
            if constraint is not None:
                started = time.perf_counter()
                constraint.mask(logits)
                stats.mask_s += time.perf_counter() - started
            started = time.perf_counter()
            token = sampler.pick(logits)
            stats.sample_s += time.perf_counter() - started
            if constraint is not None:
                constraint.accept(token)
            if token in stop_ids:
                finish = "stop"
                break
            if recorder is not None:
                recorder.emitted(token)
            forced = i < len(drafts) and token == drafts[i]
            emitted += 1
            stats.completion_tokens += 1
            stats.forced_tokens += forced
            pieces.append(Piece(token, utf8.decode(decoded_vocab[token]), forced))
            if not forced:
                # The model's own pick: drafts after it are stale, in the cache too.
                if i < len(drafts):
                    draft_limit = i + 1
                elif drafts:
                    draft_limit = min(2 * draft_limit, _MAX_DRAFT)
                _crop(cache, len(drafts) - i)
                feed = [token]
                break
        if finish is not None:
            tail = utf8.decode(b"", final=True)
            if tail:
                pieces.append(Piece(-1, tail, False))
        yield Batch(tuple(pieces), finish)
        if finish is not None:
            return
