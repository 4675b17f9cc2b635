"""Pick the next token from (masked) logits: greedy, or temperature + top-p with a seed.

Two samplers, one per kind of logits: :class:`Sampler` over torch tensors (the torch runtime)
and :class:`NumpySampler` over numpy arrays (the llama.cpp runtime, which imports no torch).
Sampled decoding draws exactly one random number per token picked, whatever the logits (greedy
draws none), so a seeded run is reproducible and jump-forward (which asks the sampler at every
position, forced or not) consumes the random stream exactly as plain decoding does. The two
use different generators: the same seed picks the same tokens within a runtime, not across.

A retry that asks for ``"less_repetition"`` (:attr:`~sdk._backend.GenerationRequest.cures`,
after a :class:`~sdk.RepeatedOutput`) gets a :class:`RepetitionPenalty` in its sampler: before
each pick, every token's logit is lowered by :data:`REPETITION_PENALTY` for each time it was
picked among the last :data:`REPETITION_WINDOW` tokens (OpenAI's ``frequency_penalty``, which
the HTTP servers are sent, bounded to a window as llama.cpp bounds its ``repeat_penalty`` to
``repeat_last_n``). JSON's punctuation counts too: a list that repeats itself is pushed
towards its ``]`` as well as towards new words, which is what ended SmolLM2's loops (the
retry finished valid on each of the three recipe prompts that looped; with the words alone
counted, none did: docs/retries.md). A token that a later rewind drops stays counted (the
sampler does not see rewinds): what was rejected is not worth repeating either. Without the
cure the samplers do exactly what they did (no penalty object, no cost).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Collection
from typing import Any

from sdk._local._deps import require

__all__ = [
    "REPETITION_PENALTY",
    "REPETITION_WINDOW",
    "SEED_MODULUS",
    "NumpySampler",
    "RepetitionPenalty",
    "Sampler",
    "check_parameters",
    "sampler_for",
]

_LESS = "less_repetition"  # the cure (sdk._backend.CURES) this module applies

REPETITION_PENALTY = 1.0
"""How much a token's logit is lowered per recent pick of it, after a repetition (as OpenAI's
``frequency_penalty``, subtracted from the logits the same way). 0.5, what the HTTP servers
are sent, also ended SmolLM2-135M's loops but let it fill a list with one item eight times;
1.0 did not (docs/retries.md)."""

REPETITION_WINDOW = 64
"""How many of the last tokens picked are counted (llama.cpp's ``repeat_last_n`` default)."""


def check_parameters(temperature: float | None, top_p: float | None) -> tuple[bool, float, float]:
    """``(greedy, temperature, top_p)`` as a sampler uses them; ValueError for a top_p outside
    (0, 1] or a temperature that is negative or not finite."""
    greedy = not temperature
    value = float(temperature or 1.0)
    p = 1.0 if top_p is None else float(top_p)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], not {top_p}")
    if not 0 <= value < math.inf:
        raise ValueError(f"temperature must be a finite number >= 0, not {temperature}")
    return greedy, value, p


SEED_MODULUS = 2**64
"""Seeds are taken modulo this (numpy's generator takes no negative seed, torch's none past 64
bits), so every int is a seed: the same int, the same draws."""


class RepetitionPenalty:
    """Lowers the logits of the tokens picked recently (see the module docstring):
    ``penalty`` per pick among the last ``window`` tokens picked."""

    __slots__ = ("_counts", "_recent", "_window", "penalty")

    def __init__(
        self,
        *,
        penalty: float = REPETITION_PENALTY,
        window: int = REPETITION_WINDOW,
    ) -> None:
        if not (penalty >= 0 and math.isfinite(penalty)) or window < 1:
            raise ValueError(
                f"the penalty must be finite and >= 0 and the window >= 1, not {penalty}, {window}"
            )
        self.penalty = penalty
        self._window = window
        self._recent: deque[int] = deque()
        self._counts: Counter[int] = Counter()

    def lowered(self) -> dict[int, float]:
        """What each token's logit is lowered by now (the tokens not named: nothing)."""
        return {token: self.penalty * count for token, count in self._counts.items()}

    def picked(self, token: int) -> None:
        """Count ``token``, just picked."""
        self._recent.append(token)
        self._counts[token] += 1
        if len(self._recent) > self._window:
            old = self._recent.popleft()
            self._counts[old] -= 1
            if not self._counts[old]:
                del self._counts[old]


class Sampler:
    """Chooses tokens. ``temperature`` None or 0 means greedy (argmax); ``top_p`` None means 1.

    ``seed`` makes sampled decoding reproducible; without it each sampler seeds itself at random.
    """

    def __init__(
        self,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        device: str = "cpu",
        penalty: RepetitionPenalty | None = None,
    ) -> None:
        self.greedy, self.temperature, self.top_p = check_parameters(temperature, top_p)
        self.penalty = penalty
        """Lowers recent word tokens before each pick (a cured retry's), else ``None``."""
        self._torch = require("torch")
        self._generator: Any = None
        if not self.greedy:
            self._generator = self._torch.Generator(device=device)
            if seed is None:
                self._generator.seed()
            else:
                self._generator.manual_seed(seed % SEED_MODULUS)

    def pick(self, logits: Any) -> int:
        """The chosen token id; ``logits`` is 1 x V with forbidden tokens at -inf (lowered in
        place by the :attr:`penalty`, when there is one)."""
        penalty = self.penalty
        if penalty is None:
            return self._pick(logits)
        lowered = penalty.lowered()
        if lowered:
            torch = self._torch
            ids = torch.tensor(list(lowered), device=logits.device)
            by = torch.tensor(list(lowered.values()), dtype=logits.dtype, device=logits.device)
            logits.view(-1)[ids] -= by
        token = self._pick(logits)
        penalty.picked(token)
        return token

    def _pick(self, logits: Any) -> int:
        torch = self._torch
        if self.greedy:
            return int(torch.argmax(logits, dim=-1).item())
        # Shifted by the largest logit first, in float64: a tiny temperature must not overflow
        # to inf (inf - inf is NaN) nor round to a float32 zero; the softmax is the same.
        values = logits.double()
        probs = torch.softmax((values - values.max()) / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
            before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
            # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
            sorted_probs[before >= self.top_p] = 0.0
            choice = torch.multinomial(sorted_probs, 1, generator=self._generator)
            return int(order.gather(-1, choice).item())
        return int(torch.multinomial(probs, 1, generator=self._generator).item())


class NumpySampler:
    """:class:`Sampler` over numpy logits (1 x V or V, float32, forbidden tokens at -inf).

    Sampled decoding: softmax of ``logits / temperature`` in float64, the top-p prefix kept
    (the smallest set of the most likely tokens whose mass reaches ``top_p``; the top token
    always stays), then one uniform draw from numpy's ``Generator`` (PCG64, seeded with ``seed``)
    picks the token by inverse CDF. Ties keep the lower token id first.
    """

    def __init__(
        self,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        penalty: RepetitionPenalty | None = None,
    ) -> None:
        self.greedy, self.temperature, self.top_p = check_parameters(temperature, top_p)
        self.penalty = penalty
        """Lowers recent word tokens before each pick (a cured retry's), else ``None``."""
        self._np = require("numpy")
        self._rng: Any = None
        if not self.greedy:
            self._rng = self._np.random.default_rng(None if seed is None else seed % SEED_MODULUS)

    def pick(self, logits: Any) -> int:
        """The chosen token id (``logits`` lowered in place by the :attr:`penalty`, when there
        is one)."""
        penalty = self.penalty
        if penalty is None:
            return self._pick(logits)
        lowered = penalty.lowered()
        if lowered:
            np = self._np
            row = logits.reshape(-1)
            row[np.fromiter(lowered, dtype=np.intp)] -= np.fromiter(
                lowered.values(), dtype=row.dtype
            )
        token = self._pick(logits)
        penalty.picked(token)
        return token

    def _pick(self, logits: Any) -> int:
        np = self._np
        row = logits.reshape(-1)
        if self.greedy:
            return int(np.argmax(row))
        values = row.astype(np.float64)
        # Shifted first, then scaled: a tiny temperature must not overflow to inf (and inf -
        # inf to NaN); a shifted logit that overflows is -inf, its limit.
        with np.errstate(over="ignore"):
            probs = np.exp((values - values.max()) / self.temperature)
        if self.top_p < 1.0:
            order = np.argsort(-probs, kind="stable")
            sorted_probs = probs[order] / probs.sum()
            before = np.cumsum(sorted_probs) - sorted_probs
            kept = int(np.count_nonzero(before < self.top_p))
            order, weights = order[:kept], sorted_probs[:kept]
        else:
            order, weights = None, probs
        cdf = np.cumsum(weights)
        draw = float(self._rng.random()) * float(cdf[-1])
        index = min(int(np.searchsorted(cdf, draw, side="right")), len(cdf) - 1)
        # A token of probability 0 (a -inf logit) is never picked: its CDF step is flat.
        while weights[index] == 0.0 and index > 0:
            index -= 1
        return int(order[index]) if order is not None else index


def sampler_for(
    runtime: str,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    device: str = "cpu",
    cures: Collection[str] = (),
) -> Sampler | NumpySampler:
    """The sampler for the logits ``runtime`` gives: numpy's on ``"llama.cpp"``, torch's
    (on ``device``) otherwise. ValueError for bad parameters (:func:`check_parameters`).
    ``cures``: the fixes the request asks for; ``"less_repetition"`` gives the sampler a
    :class:`RepetitionPenalty`."""
    penalty = RepetitionPenalty() if _LESS in cures else None
    if runtime == "llama.cpp":
        return NumpySampler(temperature=temperature, top_p=top_p, seed=seed, penalty=penalty)
    return Sampler(temperature=temperature, top_p=top_p, seed=seed, device=device, penalty=penalty)
