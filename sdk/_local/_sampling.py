"""Pick the next token from (masked) logits: greedy, or temperature + top-p with a seed.

A :class:`Sampler` draws exactly one random number per token it picks, whatever the logits, so
a seeded run is reproducible and jump-forward (which asks the sampler at every position,
forced or not) consumes the random stream exactly as plain decoding does.
"""

from __future__ import annotations

from typing import Any

from sdk._local._deps import require

__all__ = ["Sampler"]


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
    ) -> None:
        self._torch = require("torch")
        self.greedy = not temperature
        self.temperature = float(temperature or 1.0)
        self.top_p = 1.0 if top_p is None else float(top_p)
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], not {top_p}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, not {temperature}")
        self._generator: Any = None
        if not self.greedy:
            self._generator = self._torch.Generator(device=device)
            if seed is None:
                self._generator.seed()
            else:
                self._generator.manual_seed(seed)

    def pick(self, logits: Any) -> int:
        """The chosen token id; ``logits`` is 1 x V with forbidden tokens at -inf."""
        torch = self._torch
        if self.greedy:
            return int(torch.argmax(logits, dim=-1).item())
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
            before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
            # Keep the smallest prefix whose mass reaches top_p (the top token always stays).
            sorted_probs[before >= self.top_p] = 0.0
            choice = torch.multinomial(sorted_probs, 1, generator=self._generator)
            return int(order.gather(-1, choice).item())
        return int(torch.multinomial(probs, 1, generator=self._generator).item())
