"""What a rewound generation may not write again: text bans, applied as a token mask.

A rewind (``Generation.rewind``) rules out the continuation that produced the bad value, so
that greedy decoding cannot write it again. A ban is text, not a token: "from byte ``at`` of the
output, the text may not begin with ``text``". A token ban alone would not hold: the model can
spell the same text in other pieces (``"blog`` banned, it writes ``"`` then ``blog``). The mask
forbids, at each step, every token that would complete the banned text from what has been
written since ``at``, and every token that stops short of it but after which the grammar forces
the rest (an enum: ``happy`` banned, ``h`` can only go on as ``appy``); other tokens that stop
short stay allowed (they may still lead elsewhere), and once the output has left the banned
text the ban is spent. A deeper trap (several free tokens, each of which can only lead into the
banned text) is not foreseen: when no token is left, the step raises :class:`RewindExhausted`.

Bans live as long as the text before ``at`` stays: a rewind to an earlier offset drops the bans
after it (their context is being rewritten). Several rewinds to one place add up (a growing set
of bans at that offset).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from sdk._errors import BackendError

__all__ = ["Ban", "Bans", "RewindExhausted", "VocabIndex", "forbidden_tokens"]


class RewindExhausted(BackendError):
    """Every continuation the grammar allows at some point was ruled out by rewinds.

    ``offset`` is the character offset of the output where no token was left. A fresh
    attempt (no bans) may still succeed, so it is retryable.
    """

    retryable = True

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class VocabIndex:
    """Token ids sorted by the bytes they stand for: every token that begins with some bytes,
    found by bisection (built once per tokenizer)."""

    def __init__(self, decoded_vocab: Sequence[bytes]) -> None:
        order = sorted(range(len(decoded_vocab)), key=decoded_vocab.__getitem__)
        self._keys = [decoded_vocab[i] for i in order]
        self._ids = order
        self._exact: dict[bytes, list[int]] = {}
        for i, piece in enumerate(decoded_vocab):
            self._exact.setdefault(piece, []).append(i)

    def exactly(self, piece: bytes) -> list[int]:
        """The ids of the tokens that stand for exactly ``piece``."""
        return self._exact.get(piece, [])

    def starting_with(self, prefix: bytes) -> list[int]:
        """The ids of the tokens whose bytes begin with ``prefix`` (non-empty)."""
        keys = self._keys
        lo = bisect_left(keys, prefix)
        hi = lo
        while hi < len(keys) and keys[hi].startswith(prefix):
            hi += 1
        return self._ids[lo:hi]


@dataclass(frozen=True, slots=True)
class Ban:
    """From byte ``at`` of the output, the text may not begin with ``text`` (non-empty)."""

    at: int
    text: bytes


class Bans:
    """The bans of one generation."""

    def __init__(self) -> None:
        self._bans: list[Ban] = []

    def __len__(self) -> int:
        return len(self._bans)

    def __iter__(self) -> Iterator[Ban]:
        return iter(self._bans)

    def add(self, at: int, text: bytes) -> None:
        if text and Ban(at, text) not in self._bans:
            self._bans.append(Ban(at, text))

    def keep_until(self, at: int) -> None:
        """Drop the bans that start after byte ``at`` (the output is rewritten from there)."""
        self._bans = [ban for ban in self._bans if ban.at <= at]

    def texts_at(self, offset: int) -> list[bytes]:
        """The texts banned at byte ``offset``, oldest first."""
        return [ban.text for ban in self._bans if ban.at == offset]

    def rests(self, output: bytes | bytearray) -> list[bytes]:
        """What is left to write of each ban the output (the whole output so far) is still
        following: the next token may not complete any of these."""
        rests: list[bytes] = []
        end = len(output)
        for ban in self._bans:
            done = end - ban.at
            # Spent once the output is past the banned text's length: it diverged from it
            # (a completed ban can never have been written).
            if done < 0 or done >= len(ban.text):
                continue
            if output[ban.at :] == ban.text[:done]:
                rests.append(ban.text[done:])
        return rests


def forbidden_tokens(
    rests: Sequence[bytes],
    index: VocabIndex,
    forces: Callable[[int, bytes], bool] | None = None,
) -> list[int]:
    """The tokens that may not come next, given the :meth:`Bans.rests`.

    A token that begins with a rest completes a ban. A token that is a proper prefix of a rest
    is forbidden too when ``forces(token, remainder)`` says the grammar, once it has the token,
    forces the remainder (None: no grammar, nothing is forced).
    """
    ids: list[int] = []
    for rest in rests:
        ids.extend(index.starting_with(rest))
        if forces is None:
            continue
        for cut in range(1, len(rest)):
            ids.extend(t for t in index.exactly(rest[:cut]) if forces(t, rest[cut:]))
    return ids
