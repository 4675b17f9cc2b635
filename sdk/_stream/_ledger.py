"""The attempts of one stream, sans-I/O: the one in progress, the records of those that ended,
and what the next one is told.

:class:`Ledger` makes each :class:`~sdk._stream._attempt.AttemptState` — a fresh one (a new request,
with the feedback gathered so far) or one that continues a rewound generation (it starts with
the text the rewind kept, and counts only what comes after) — and records each attempt once,
whatever ends it. The :class:`~sdk.Stream` asks it, and only moves data.
"""

from __future__ import annotations

from typing import Any

from sdk._backend import Message, Usage
from sdk._options import StreamConfig
from sdk._records import Attempt, AttemptInfo
from sdk._retry import Retry
from sdk._stream._attempt import AttemptState
from sdk._trackers._target import Compiled

__all__ = ["Ledger"]


class Ledger:
    """The attempts of a stream whose output must be ``compiled``, run as ``config`` says."""

    __slots__ = ("_compiled", "_config", "_feedback", "_recorded", "current", "records")

    def __init__(self, compiled: Compiled, config: StreamConfig) -> None:
        self._compiled = compiled
        self._config = config
        self._feedback: list[Message] = []
        self._recorded = True  # the attempt in progress is in records already
        self.current: AttemptState | None = None
        """The attempt in progress (or the last one); ``None`` before the first."""
        self.records: list[AttemptInfo] = []
        """The attempts that ended, in order."""

    @property
    def number(self) -> int:
        """The number of the attempt in progress (or the last one); 0 before the first."""
        return 0 if self.current is None else self.current.number

    @property
    def in_progress(self) -> bool:
        """An attempt has begun and is not recorded yet."""
        return not self._recorded

    @property
    def usage(self) -> Usage:
        """Token usage over every attempt, the one in progress included."""
        total = Usage()
        for info in self.records:
            total = total + info.usage
        if not self._recorded and self.current is not None:
            total = total + self.current.usage
        return total

    @property
    def snapshot(self) -> Any:
        """The partial value of the attempt in progress (or the last one)."""
        return None if self.current is None else self.current.snapshot

    def begin(self) -> Attempt:
        """Start a fresh attempt; what its request is given (the feedback so far)."""
        number = self.number + 1
        previous = self.records[-1].error if self.records else None
        cures = frozenset(
            cure for info in self.records if (cure := getattr(info.error, "cure", None))
        )
        self.current = self._state(number, Usage(), cures)
        return Attempt(number, tuple(self._feedback), previous, cures)

    def record(self, error: BaseException | None) -> AttemptInfo:
        """Record the attempt in progress as ended by ``error`` (``None``: it succeeded)."""
        assert self.current is not None
        info = self.current.record(error)
        self.records.append(info)
        self._recorded = True
        return info

    def learn(self, retry: Retry, info: AttemptInfo) -> None:
        """Keep what the next fresh attempt is told about the failed one."""
        self._feedback.extend(retry.feedback(info))

    def resume(self, kept: str, info: AttemptInfo) -> int:
        """Start the attempt that continues a rewound generation, after the failed attempt
        ``info`` (already recorded): it begins with ``kept``, the text the rewind kept, and
        counts usage from there. Its number."""
        assert self.current is not None
        base = self.current.usage_base + info.usage
        self.current = self._state(info.number + 1, base, self.current.cures)
        self.current.replay(kept)
        return self.current.number

    def _state(self, number: int, base: Usage, cures: frozenset[str]) -> AttemptState:
        config = self._config
        self._recorded = False
        return AttemptState(
            number,
            self._compiled,
            lenient=config.lenient,
            deltas=config.deltas,
            reasoning=config.reasoning,
            dispatch=config.dispatch,
            regex_timeout=config.regex_timeout,
            usage_base=base,
            reasoning_fallback=config.reasoning_fallback,
            cures=cures,
            runaway=config.runaway,
        )
