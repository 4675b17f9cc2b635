"""The forward pass over transformers and torch: any Hugging Face causal LM, CPU or CUDA.

Continuous batching. The KV caches of every sequence of a model live in one store
(:class:`_SlotStore`): per layer one keys and one values tensor of ``rows x kv heads x capacity
x head dim``, a sequence owning one row (its slot) from its first decode until it closes, its
tokens' keys and values at positions ``0 .. length - 1`` of the row. One round of
:meth:`TorchForward.decode_many` runs the next tokens of every sequence being decoded (its pick
and jump-forward drafts, at most :data:`_SMALL_STEP`) in **one** forward pass: the batch is the
rows of those sequences, each row's new tokens right-padded to the longest, with position ids
per row and a 4D attention mask that lets each token see its own row's keys up to its own
position and nothing else (a padding token sees key 0 only, and nobody sees it). The model's
attention layers call the store's layer (:class:`_SlotLayer`, a transformers cache layer)
with the batch's new keys and values: it writes each row's real ones at that row's positions
and returns the rows' keys and values up to the longest (a view of the store when the rows are
contiguous, which a compact allocation makes the usual case). Truncating a sequence (a rewind,
rejected drafts) only shortens its length: the stale keys past it are masked, then overwritten.
A prompt (a sequence with nothing cached yet, or more than :data:`_SMALL_STEP` tokens to
decode) is prefilled in a pass of its own, so it decodes as it would alone and does not pad the
others' one-token rows to its length.

Batching needs every layer to be plain full attention (no sliding window, no linear attention:
their masks are not the one built here) and the ``sdpa`` or ``eager`` attention; other models
keep one ``DynamicCache`` per sequence (:class:`DynamicSequence`), decoded one after the other.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sdk._local._deps import require

__all__ = ["DynamicSequence", "TorchForward", "TorchSequence", "batchable"]

_SMALL_STEP = 33
"""Tokens a sequence being decoded (not prefilled) asks for at most: its pick and its drafts
(``_decode._MAX_DRAFT`` + 1). A sequence asking for more prefills in a pass of its own."""

_MIN_CAPACITY = 256
"""Positions a store row holds at first; the capacity doubles as sequences grow."""

_ATTENTION = ("sdpa", "eager")
"""Attention implementations that take the 4D mask the batched pass builds."""


def batchable(model: Any) -> bool:
    """True when ``model``'s sequences can share one batched pass (see the module docstring):
    every layer full attention, and an attention implementation that takes a 4D mask."""
    config = model.config
    if getattr(config, "_attn_implementation", None) not in _ATTENTION:
        return False
    if getattr(config, "is_encoder_decoder", False):
        return False
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return all(kind == "full_attention" for kind in layer_types)
    return getattr(config, "sliding_window", None) is None


class TorchForward:
    """A transformers causal LM as a :class:`~sdk._local._forward.ForwardModel`."""

    runtime = "torch"
    drafts_in_shared_rounds = True

    def __init__(self, model: Any, device: str, *, batched: bool | None = None) -> None:
        self._torch = require("torch")
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
        self.batched: bool = batchable(model) if batched is None else batched
        """True when the sequences share a KV store and decode together in one pass a round;
        False: one ``DynamicCache`` per sequence, one pass per sequence (see the module
        docstring)."""
        self._store = _SlotStore(self._torch, _layers(model.config))
        self._lock = threading.RLock()
        """Held by every forward pass: one round at a time."""
        self.passes = 0
        """Forward passes run so far (a batched round's pass counts once)."""
        self.batch_sizes: list[int] = []
        """Sequences in each of the last passes on the store (the latest 1000; a prefill's
        pass holds one)."""

    def sequence(self) -> TorchSequence | DynamicSequence:
        """A new, empty sequence (on the shared store when :attr:`batched`)."""
        return TorchSequence(self) if self.batched else DynamicSequence(self)

    def decode_many(
        self, wants: Sequence[tuple[Any, int]], ready: Callable[[int, Any], None] | None = None
    ) -> list[Any]:
        """One round (see ``ForwardModel.decode_many``): the prompts to prefill one pass each,
        then every other sequence's tokens in one batched pass (one pass per sequence when not
        :attr:`batched`). Each result is the sequence's ``keep`` x V logits rows; ``ready`` is
        called for a prompt's rows right after its pass."""
        if len({id(s) for s, _ in wants}) != len(wants):
            raise ValueError("a round takes distinct sequences")
        with self._lock:
            if not self.batched:
                return [sequence._run(keep) for sequence, keep in wants]
            results: list[Any] = [None] * len(wants)
            small: list[int] = []
            for i, (sequence, keep) in enumerate(wants):
                _check_keep(keep, len(sequence._pending))
                if sequence._length == 0 or len(sequence._pending) > _SMALL_STEP:
                    results[i] = self._pass([(sequence, keep)])[0]
                    if ready is not None:
                        ready(i, results[i])
                else:
                    small.append(i)
            if small:
                rows = self._pass([wants[i] for i in small])
                for i, got in zip(small, rows, strict=True):
                    results[i] = got
            return results

    def _pass(self, wants: Sequence[tuple[TorchSequence, int]]) -> list[Any]:
        """One forward pass over the rows of ``wants``' sequences; each one's logits rows."""
        torch, store = self._torch, self._store
        for sequence, _ in wants:
            if sequence._row is None:
                sequence._row = store.take()
        given, wants = wants, sorted(wants, key=lambda want: want[0]._row or 0)
        rows = [sequence._row for sequence, _ in wants if sequence._row is not None]
        starts = [sequence._length for sequence, _ in wants]
        counts = [len(sequence._pending) for sequence, _ in wants]
        width = max(counts)
        span = max(s + n for s, n in zip(starts, counts, strict=True))
        store.reserve(max(rows) + 1, max(starts) + width)  # the padding is written too
        device = self.device
        with torch.inference_mode():
            ids = torch.zeros((len(wants), width), dtype=torch.long)
            for b, (sequence, _) in enumerate(wants):
                ids[b, : counts[b]] = torch.tensor(sequence._pending, dtype=torch.long)
            start = torch.tensor(starts, dtype=torch.long)[:, None]
            count = torch.tensor(counts, dtype=torch.long)[:, None]
            offset = torch.arange(width, dtype=torch.long)[None, :]
            positions = start + offset
            # Each token sees its row's keys up to its own position; a padding token key 0.
            limit = torch.where(offset < count, positions, 0)
            allowed = torch.arange(span, dtype=torch.long)[None, None, :] <= limit[:, :, None]
            mask = allowed[:, None, :, :].to(device)
            if self.model.config._attn_implementation == "eager":
                dtype = self.model.dtype
                mask = torch.where(mask, 0.0, torch.finfo(dtype).min).to(dtype)
            first = min(n - keep for n, (_, keep) in zip(counts, wants, strict=True))
            cache = store.round_cache(rows, starts, counts, span)
            out = self.model(
                input_ids=ids.to(device),
                attention_mask=mask,
                position_ids=positions.to(device),
                use_cache=True,
                logits_to_keep=width - first,
                **{self._cache_kwarg: cache},
            )
        self.passes += 1
        self.batch_sizes.append(len(wants))
        del self.batch_sizes[:-1000]
        logits = out.logits
        found: dict[int, Any] = {}
        for b, (sequence, keep) in enumerate(wants):
            end = counts[b] - first
            found[id(sequence)] = logits[b, end - keep : end]
            sequence._length += counts[b]
            sequence._pending = []
        return [found[id(sequence)] for sequence, _ in given]


class TorchSequence:
    """One sequence over a batched :class:`TorchForward` (see ``ForwardPass``): its row of the
    model's KV store, how many of its positions hold this sequence's tokens, and the tokens
    appended since."""

    def __init__(self, forward: TorchForward) -> None:
        self._forward = forward
        self._row: int | None = None
        """Its row of the store, from its first decode until it closes."""
        self._length = 0
        """Tokens whose keys and values the row holds."""
        self._pending: list[int] = []
        """Tokens appended and not decoded yet."""
        self._closed = False

    @property
    def length(self) -> int:
        """Tokens in the sequence (those the KV cache holds, and those appended since)."""
        return self._length + len(self._pending)

    def append(self, tokens: Sequence[int]) -> None:
        """Add ``tokens`` (the next :meth:`TorchForward.decode_many` decodes them)."""
        self._pending.extend(tokens)

    def decode(self, tokens: Sequence[int], keep: int) -> Any:
        """Run the model over ``tokens``; the logits of the last ``keep`` positions."""
        _check_keep(keep, len(tokens))
        if self._closed:
            raise ValueError("this sequence is closed")
        self._pending.extend(tokens)
        (rows,) = self._forward.decode_many([(self, keep)])
        return rows

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` tokens (the row's keys past them are stale: masked, then
        overwritten)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate {self.length} tokens to {length}")
        if length >= self._length:
            del self._pending[length - self._length :]
            return
        self._pending.clear()
        self._length = length

    def close(self) -> None:
        """Give the row back at once (a round in flight may still write it: the row's next
        owner writes from position 0 in a later round)."""
        if self._closed:
            return
        self._closed = True
        row, self._row = self._row, None
        if row is not None:
            self._forward._store.give(row)


class DynamicSequence:
    """One sequence with a ``DynamicCache`` of its own, for a model that does not batch (see
    the module docstring): its passes run one after the other."""

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
        with self._forward._lock:
            return self._run(keep)

    def _run(self, keep: int) -> Any:
        torch, model = self._torch, self._forward.model
        tokens, self._pending = self._pending, []
        _check_keep(keep, len(tokens))
        with torch.inference_mode():
            out = model(
                input_ids=torch.tensor([tokens], device=self._forward.device),
                use_cache=True,
                logits_to_keep=keep,
                **{self._forward._cache_kwarg: self._cache},
            )
        self._forward.passes += 1
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


def _check_keep(keep: int, tokens: int) -> None:
    if not 1 <= keep <= tokens:
        raise ValueError(f"keep must be in 1..{tokens}, not {keep}")


class _SlotStore:
    """The KV caches of a model's :class:`TorchSequence` s: per layer a keys and a values tensor
    of ``rows x kv heads x capacity x head dim`` (allocated at a layer's first write, grown by
    copying), and which rows are free."""

    def __init__(self, torch: Any, layers: int) -> None:
        self._torch = torch
        self.keys: list[Any] = [None] * layers
        self.values: list[Any] = [None] * layers
        self.rows = 0
        """Rows every layer's tensors have (or will have at their next write)."""
        self.capacity = 0
        """Positions every row holds (likewise)."""
        self._free: list[int] = []
        self._used = 0
        self._rows_lock = threading.Lock()

    def take(self) -> int:
        """A free row (the lowest: the rows in use stay contiguous)."""
        with self._rows_lock:
            if self._free:
                self._free.sort()
                return self._free.pop(0)
            self._used += 1
            return self._used - 1

    def give(self, row: int) -> None:
        """Row ``row`` is free again (its keys and values are stale)."""
        with self._rows_lock:
            self._free.append(row)

    def reserve(self, rows: int, length: int) -> None:
        """Make room for ``rows`` rows of ``length`` positions (the tensors grow at their next
        write)."""
        if rows > self.rows:
            self.rows = max(rows, 2 * self.rows)
        if length > self.capacity:
            self.capacity = max(length, 2 * self.capacity, _MIN_CAPACITY)

    def tensors(self, layer: int, like: Any) -> tuple[Any, Any]:
        """Layer ``layer``'s keys and values tensors, allocated or grown to the reserved size
        (``like``: the layer's new keys, for their heads, head dim, dtype and device). New room
        is zeros: a masked key must be finite (its weight is 0, and 0 x NaN is NaN)."""
        torch = self._torch
        keys, values = self.keys[layer], self.values[layer]
        if keys is None or keys.shape[0] < self.rows or keys.shape[2] < self.capacity:
            shape = (self.rows, like.shape[1], self.capacity, like.shape[3])
            grown_k = torch.zeros(shape, dtype=like.dtype, device=like.device)
            grown_v = torch.zeros(shape, dtype=like.dtype, device=like.device)
            if keys is not None:
                rows, _, length, _ = keys.shape
                grown_k[:rows, :, :length] = keys
                grown_v[:rows, :, :length] = values
            keys, values = self.keys[layer], self.values[layer] = grown_k, grown_v
        return keys, values

    def round_cache(self, rows: list[int], starts: list[int], counts: list[int], span: int) -> Any:
        """A transformers ``Cache`` for one pass over ``rows`` (sorted), whose layers write each
        row's ``counts`` new keys and values at its ``starts`` and return positions ``0 ..
        span - 1`` of the rows."""
        transformers = require("transformers")
        plan = _RoundPlan(self, rows, starts, counts, span)
        layer_class = _slot_layer_class(transformers)
        return transformers.Cache(layers=[layer_class(plan, i) for i in range(len(self.keys))])


class _RoundPlan:
    """What one batched pass writes where (shared by the round's cache layers)."""

    __slots__ = ("_where", "contiguous", "counts", "rows", "span", "starts", "store")

    def __init__(
        self, store: _SlotStore, rows: list[int], starts: list[int], counts: list[int], span: int
    ) -> None:
        self.store, self.rows, self.starts, self.counts, self.span = (
            store,
            rows,
            starts,
            counts,
            span,
        )
        self.contiguous = rows == list(range(rows[0], rows[0] + len(rows)))
        self._where: tuple[Any, Any, Any] | None = None

    def where(self, device: Any, width: int) -> tuple[Any, Any, Any]:
        """Index tensors on ``device`` (made at the first layer): each batch row's store row
        (``B x 1``), the positions its ``width`` new tokens go to (``B x width``: a row's
        padding lands past its length, where nothing reads it before it is overwritten), and
        the rows as a vector (for a non-contiguous read)."""
        if self._where is None:
            torch = self.store._torch
            rows = torch.tensor(self.rows, dtype=torch.long, device=device)
            starts = torch.tensor(self.starts, dtype=torch.long, device=device)
            positions = starts[:, None] + torch.arange(width, dtype=torch.long, device=device)
            self._where = (rows[:, None], positions, rows)
        return self._where


_layer_classes: dict[int, type] = {}


def _slot_layer_class(transformers: Any) -> type:
    """The cache layer class over the store, made once (it subclasses transformers' own)."""
    made = _layer_classes.get(id(transformers))
    if made is not None:
        return made
    base = transformers.cache_utils.CacheLayerMixin

    class _SlotLayer(base):  # type: ignore[misc,valid-type]
        """One layer of a round's cache: writes into the store, reads the round's rows."""

        is_sliding = False
        is_croppable = False

        def __init__(self, plan: _RoundPlan, layer: int) -> None:
            super().__init__()
            self.plan, self.layer = plan, layer
            self.is_initialized = True

        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            return None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
            plan = self.plan
            keys, values = plan.store.tensors(self.layer, key_states)
            rows, positions, vector = plan.where(keys.device, key_states.shape[2])
            # One write per tensor: [B, width, heads, dim] at (row, position) pairs.
            keys[rows, :, positions] = key_states.transpose(1, 2)
            values[rows, :, positions] = value_states.transpose(1, 2)
            if plan.contiguous:
                first, last = plan.rows[0], plan.rows[-1] + 1
                return keys[first:last, :, : plan.span], values[first:last, :, : plan.span]
            return keys[vector, :, : plan.span], values[vector, :, : plan.span]

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.plan.span, 0

        def get_seq_length(self) -> int:
            return self.plan.span - max(self.plan.counts)

        def get_max_length(self) -> int:
            return -1

    _layer_classes[id(transformers)] = _SlotLayer
    return _SlotLayer


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


def _layers(config: Any) -> int:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return int(text.num_hidden_layers)
