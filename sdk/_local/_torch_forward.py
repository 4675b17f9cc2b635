"""The forward pass over transformers and torch: any Hugging Face causal LM, CPU or CUDA.

One :class:`TorchSequence` owns a ``DynamicCache`` that every forward pass updates in place and
that :meth:`~TorchSequence.truncate` crops.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from sdk._local._deps import require

__all__ = ["TorchForward", "TorchSequence"]


class TorchForward:
    """A transformers causal LM as a :class:`~sdk._local._forward.ForwardModel`."""

    runtime = "torch"

    def __init__(self, model: Any, device: str) -> None:
        self.model = model
        """The transformers model, in eval mode, on ``device``."""
        self.device = device
        head = model.get_output_embeddings()
        self.vocab_size: int = (
            int(head.weight.shape[0]) if head is not None else int(model.config.vocab_size)
        )
        self.context_length: int | None = getattr(model.config, "max_position_embeddings", None)
        self.stop_token_ids: frozenset[int] = _eos_ids(getattr(model, "generation_config", None))
        self._cache_kwarg = _cache_kwarg(model)

    def sequence(self) -> TorchSequence:
        """A new, empty sequence with its own KV cache."""
        return TorchSequence(self)

    def decode_many(
        self,
        wants: Sequence[tuple[TorchSequence, int]],
        ready: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """One round: each sequence's appended tokens, one forward pass per sequence (see
        ``ForwardModel.decode_many``; ``ready`` is not called: the rows come at the end)."""
        return [sequence._run(keep) for sequence, keep in wants]


class TorchSequence:
    """One sequence over a :class:`TorchForward` (see ``ForwardPass``)."""

    def __init__(self, forward: TorchForward) -> None:
        self._torch = require("torch")
        transformers = require("transformers")
        self._forward = forward
        self._cache: Any = transformers.DynamicCache(config=forward.model.config)
        self._pending: list[int] = []
        """Tokens appended and not decoded yet."""

    @property
    def length(self) -> int:
        """Tokens in the sequence (those the KV cache holds, and those appended since)."""
        return int(self._cache.get_seq_length()) + len(self._pending)

    def append(self, tokens: Sequence[int]) -> None:
        """Add ``tokens`` (the next :meth:`TorchForward.decode_many` decodes them)."""
        self._pending.extend(tokens)

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        """Run the model over ``tokens``; the logits of the last ``keep`` positions."""
        self._pending.extend(tokens)
        return self._run(keep)

    def _run(self, keep: int) -> Any:
        torch, model = self._torch, self._forward.model
        tokens, self._pending = self._pending, []
        if not 1 <= keep <= len(tokens):
            raise ValueError(f"keep must be in 1..{len(tokens)}, not {keep}")
        with torch.inference_mode():
            out = model(
                input_ids=torch.tensor([tokens], device=self._forward.device),
                use_cache=True,
                logits_to_keep=keep,
                **{self._forward._cache_kwarg: self._cache},
            )
        return out.logits[0]

    def truncate(self, length: int) -> None:
        """Crop the sequence to its first ``length`` positions (the KV cache too)."""
        cached = int(self._cache.get_seq_length())
        if length >= cached:
            del self._pending[length - cached :]
            return
        self._pending.clear()
        # ``crop(-n)`` means "remove n" in transformers 5 and "keep all but n" in 4.x.
        self._cache.crop(-(cached - length))

    def close(self) -> None:
        """Drop the KV cache."""
        self._cache = None


def _cache_kwarg(model: Any) -> str:
    """The name the model's forward takes the KV cache by: ``cache`` in transformers >= 5.2x,
    ``past_key_values`` before (passing the old name now warns)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _eos_ids(generation_config: Any) -> frozenset[int]:
    value = getattr(generation_config, "eos_token_id", None)
    if isinstance(value, int):
        return frozenset({value})
    if isinstance(value, list | tuple):
        return frozenset(int(v) for v in value)
    return frozenset()
