"""Retries, decided here: whether and when a failed attempt or request is tried again.

Two budgets, as the stream asks them (:func:`next_try`):

* **Transport** failures (a :class:`~sdk.TransportError`: an HTTP status, a connection that
  failed or broke) are retried up to ``max_retries`` times in a row per attempt (the
  client's, or the request's own), each after a wait: the server's ``retry-after-ms`` /
  ``Retry-After`` (:func:`~sdk._http._status.retry_after_from`), else exponential backoff
  with jitter (:meth:`Retry.delay`). Which statuses may go away on a retry is said once,
  in :mod:`sdk._http._status`. These retries do not count against
  :attr:`Retry.max_attempts`.
* **Output** failures (the answer broke the schema, was not JSON, was cut short) are retried
  at once, with feedback, while :attr:`Retry.max_attempts` allows: it counts answers.

Every retry is logged on the ``fieldstream`` logger at INFO: what failed (the error's class,
its status and request id; never its message, which may hold a URL with a key in its query,
nor any output), which retry it is, and the wait.

The records of each attempt are in :mod:`sdk._records`, the feedback messages for the next
attempt in :mod:`sdk._feedback`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from sdk._constants import (
    DEFAULT_BACKOFF,
    DEFAULT_JITTER,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_DELAY,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_MULTIPLIER,
)
from sdk._errors import (
    RetriesExhausted,
    SchemaViolation,
    StreamError,
    TransportError,
)
from sdk._feedback import FeedbackBuilder, default_feedback
from sdk._records import AttemptInfo

__all__ = ["NO_RETRY", "Retry", "answers", "next_try"]

logger = logging.getLogger("fieldstream")


async def _sleep(seconds: float) -> None:
    """``anyio.sleep``, imported when first needed: a policy is a plain value."""
    import anyio

    await anyio.sleep(seconds)


@dataclass(frozen=True, slots=True)
class Retry:
    """When and how fast to retry.

    An output error (the model wrote something wrong: schema violations, syntax errors,
    truncation) is retried at once while answers are left (``max_attempts``); refusals,
    content filters and callback errors are not. With ``output_errors=False`` none is.

    Transport errors (connection failures and 408/409/429/5xx) are not counted here: they are
    retried up to the client's ``max_retries`` times (or the request's own ``max_retries=``)
    per attempt, whatever ``max_attempts`` says. This policy says how long each of those
    waits, as openai-python's ``_calculate_retry_timeout`` does: the server's
    ``retry_after`` when it asked for more than 0 and at most ``max_retry_after`` seconds
    (that wait, exactly: it may be longer than ``max_delay``), else the policy's own backoff,
    ``backoff * multiplier ** (n - 1)`` seconds before the n-th retry in a row, capped at
    ``max_delay``, of which a ``jitter`` fraction is drawn at random (``jitter=0.5``: between
    half and all of it) — so ``Retry-After: 0`` (or a date already past) waits the backoff,
    not nothing. A ``retry_after`` longer than ``max_retry_after`` is not retried: the error
    is raised at once (openai-python's ``_should_retry`` refuses it the same way).
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    """Answers in all, the first included (1 means no retry): how many times the model may
    write an answer that fails. Transport failures (no answer) do not count."""
    backoff: float = DEFAULT_BACKOFF
    """Seconds before the first retry of a transport error."""
    multiplier: float = DEFAULT_MULTIPLIER
    """Growth of the delay per attempt."""
    max_delay: float = DEFAULT_MAX_DELAY
    """The longest wait of the policy's own backoff, in seconds."""
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER
    """The longest wait a server may ask for and be waited for, in seconds; a longer one is
    not retried."""
    jitter: float = DEFAULT_JITTER
    """Fraction (0..1) of each delay that is random."""
    output_errors: bool = True
    """Retry errors in the model's output (violations, syntax, truncation); ``False``: none
    (the waits still apply to transport retries)."""
    backtrack: bool = False
    """Repair in place: on a schema violation, a generation that can go back on its output (the
    local engine's) rewinds to where the offending value began, rules out what it wrote there,
    and goes on; what came before stays, and its fields are not dispatched again. Each rewind
    counts as an attempt. Where it cannot (a server, a violation with no place to go back to,
    no other continuation left), the next attempt starts afresh, with feedback, as without
    it."""
    feedback: FeedbackBuilder = default_feedback
    """Builds the messages that report a failed attempt to the model."""
    sleep: Callable[[float], Awaitable[None]] = field(default=_sleep, compare=False)
    """How to wait (inject a fake in tests)."""
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    """Uniform random numbers in [0, 1) for the jitter."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff < 0 or self.max_delay < 0 or self.multiplier < 1:
            raise ValueError("backoff and max_delay must be >= 0 and multiplier >= 1")
        if not self.max_retry_after >= 0:
            raise ValueError("max_retry_after must be >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def covers(self, error: BaseException) -> bool:
        """Whether this policy retries output errors like ``error`` (answers left or not);
        never a transport error (``max_retries`` covers those)."""
        if not isinstance(error, StreamError) or not error.retryable:
            return False
        return self.output_errors and not isinstance(error, TransportError)

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to ask for another answer after answer number ``attempt`` failed with the
        output error ``error``."""
        return attempt < self.max_attempts and self.covers(error)

    def final_error(self, error: BaseException, attempts: Sequence[AttemptInfo]) -> BaseException:
        """What a stream that will not retry after ``error`` fails with: the error itself, or
        :class:`~sdk.RetriesExhausted` (every attempt's error, ``error`` as its cause) when the
        answers ran out on an output error this policy retries. A transport error is always
        raised as itself, whatever came before it."""
        if self.max_attempts > 1 and answers(attempts) >= self.max_attempts and self.covers(error):
            exhausted = RetriesExhausted([a.error for a in attempts if a.error is not None])
            exhausted.__cause__ = error
            return exhausted
        return error

    def delay(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait before the retry that follows ``attempt`` failures in a row, the
        last with ``error``: 0 for an output error, else the backoff (see the class
        docstring)."""
        if not isinstance(error, TransportError):
            return 0.0
        if error.retry_after is not None and 0 < error.retry_after <= self.max_retry_after:
            return error.retry_after  # what the server asked, as openai-python waits it
        base = min(self.max_delay, self.backoff * self.multiplier ** (attempt - 1))
        return base * (1.0 - self.jitter * self.rng())


NO_RETRY = Retry(max_attempts=1)
"""The policy of a stream given none: one answer; its waits time the transport retries."""


def answers(attempts: Sequence[AttemptInfo]) -> int:
    """How many of ``attempts`` were answers (ended by anything but a transport error)."""
    return sum(1 for a in attempts if not isinstance(a.error, TransportError))


def _transport_run(attempts: Sequence[AttemptInfo]) -> list[TransportError]:
    """The transport errors that ended the last attempts in a row (oldest first)."""
    run: list[TransportError] = []
    for info in reversed(attempts):
        if not isinstance(info.error, TransportError):
            break
        run.append(info.error)
    run.reverse()
    return run


def next_try(
    error: BaseException,
    attempts: Sequence[AttemptInfo],
    *,
    retry: Retry | None,
    max_retries: int,
) -> float | None:
    """Whether to try again after ``error`` ended the last of ``attempts`` (every attempt so
    far, recorded), and after how many seconds; ``None``: fail now.

    A transport error is retried while fewer than ``max_retries`` transport errors ended the
    attempts just before it (its ``retryable``, which
    :func:`~sdk._http._status.retryable_response` decided,
    and a ``retry_after`` no longer than ``retry.max_retry_after``, permitting); it then holds the
    earlier ones in ``retries``. An output error is retried, at once, while ``retry`` has
    answers left (:meth:`Retry.should_retry`). Each retry is logged (see the module
    docstring)."""
    policy = retry if retry is not None else NO_RETRY
    if isinstance(error, TransportError):
        run = _transport_run(attempts)
        error.retries = tuple(run[:-1])
        taken = len(run) - 1  # the retries already made in this row
        if not error.retryable or taken >= max_retries:
            return None
        if error.retry_after is not None and error.retry_after > policy.max_retry_after:
            logger.info(
                "not retrying %s: the server asked to wait %.1f s, more than max_retry_after "
                "(%.1f s)",
                _reason(error),
                error.retry_after,
                policy.max_retry_after,
            )
            return None
        wait = policy.delay(error, taken + 1)
        logger.info(
            "retrying the request after %s in %.2f seconds (retry %d of %d)",
            _reason(error),
            wait,
            taken + 1,
            max_retries,
        )
        return wait
    if retry is None:
        return None
    given = answers(attempts)
    if not retry.should_retry(error, given):
        return None
    logger.info(
        "asking for a new answer after %s (answer %d of %d failed)",
        _reason(error),
        given,
        retry.max_attempts,
    )
    return 0.0


def _reason(error: BaseException) -> str:
    """What failed, for a log line: the class, a status, a request id, a JSON Pointer and a
    keyword; nothing the server or the model wrote."""
    parts = [type(error).__name__]
    if isinstance(error, TransportError):
        if error.status is not None:
            parts.append(f"HTTP {error.status}")
        if error.request_id:
            parts.append(f"request id {error.request_id}")
    elif isinstance(error, SchemaViolation):
        parts.append(f"at {error.pointer or '/'}")
        if error.keyword:
            parts.append(f"keyword {error.keyword!r}")
    return " ".join(parts)
