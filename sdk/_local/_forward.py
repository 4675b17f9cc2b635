"""The seam between the decoding loop and a model's forward pass: three operations.

Everything that makes the local engine fieldstream's own (the grammar masks, the bans, the
jump-forward drafts verified in one pass, rewinds in place, the usage counts) lives in
``_decode`` and needs only this of a model, through a :class:`ForwardPass` (one sequence and
its KV cache): *decode these tokens* (returning the logits of the last ``keep`` positions, one
row each), *read a row* (index the returned rows), and *truncate the sequence to n tokens*. The
continuous batching of ``_scheduler`` splits the first in two: *append tokens* to each sequence,
then *decode many* sequences in one round (``ForwardModel.decode_many``).

A :class:`ForwardModel` is a loaded model that opens such sequences. Two implement it:
``_torch_forward`` (transformers over torch: any Hugging Face causal LM, CPU or CUDA) and
``_llama_cpp`` (llama.cpp's C API over a GGUF file, the default on a CPU).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["ForwardModel", "ForwardPass"]


class ForwardPass(Protocol):
    """One token sequence and its KV cache. Not thread-safe: one caller at a time."""

    @property
    def length(self) -> int:
        """Tokens in the sequence (those the KV cache holds)."""
        ...

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        """Append ``tokens`` (at least one) and return the logits of the last ``keep`` of
        them: ``keep`` x vocabulary float rows (a torch tensor on the torch runtime, a numpy
        float32 array over llama.cpp's buffer on llama.cpp), row ``i`` for the position after
        the ``len(tokens) - keep + i``-th token. The rows are valid until the next call and may
        be written in place (the masks are applied to them)."""
        ...

    def append(self, tokens: Sequence[int]) -> None:
        """Add ``tokens`` to the sequence without decoding them: the next
        :meth:`ForwardModel.decode_many` that takes the sequence decodes them."""
        ...

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens of the sequence (``0 <= length <= self.length``)."""
        ...

    def close(self) -> None:
        """Release the sequence's resources; it is not used again."""
        ...


class ForwardModel(Protocol):
    """A loaded model that opens :class:`ForwardPass` sequences."""

    runtime: str
    """Which implementation runs the forward pass: ``"torch"`` or ``"llama.cpp"``."""
    drafts_in_shared_rounds: bool
    """Whether a sequence's jump-forward drafts pay off in a round it shares with others.
    False on llama.cpp: a pass of k tokens costs about k one-token passes on a CPU, and a
    sequence's drafts are decoded in micro-batches of their own beside the others' single
    tokens, so in a shared round they cost more than the passes they save (the scheduler then
    proposes none while more than one generation holds a slot)."""
    vocab_size: int
    """Rows of the logits (at least the tokenizer's vocabulary; padded rows are masked)."""
    context_length: int | None
    """The most tokens one sequence may hold, or None when the model does not say."""
    device: str
    """The device the logits live on (``"cpu"``, ``"cuda"``, ...)."""
    stop_token_ids: frozenset[int]
    """End-of-generation tokens the model's own configuration names (may be empty)."""

    def sequence(self) -> ForwardPass:
        """A new, empty sequence."""
        ...

    def decode_many(
        self, wants: Sequence[tuple[Any, int]], ready: Callable[[int, Any], None] | None = None
    ) -> list[Any]:
        """One round over several sequences of this model (each appended to since its last
        round): for each ``(sequence, keep)``, the logits of its last ``keep`` tokens once all
        its tokens are decoded (valid until the next round), None while part of a long prompt
        is left for the next round, or the BackendError of that sequence alone. On llama.cpp
        one ``llama_decode`` call; on torch one batched forward pass for the sequences being
        decoded, and one per prompt to prefill. Raises when the pass fails (for every sequence
        of the round). ``ready(i, rows)``, when given, may be called for the ``i``-th sequence
        as soon as its rows are out, before the round's other passes (llama.cpp: a prompt
        prefilled in a call of its own); its rows are returned too."""
        ...
