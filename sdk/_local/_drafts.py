"""Jump-forward drafts: the forced text in the pieces the model itself wrote it in last time.

The grammar's forced text can be drafted as the tokenizer would split it (canonical BPE), but
a small model under a compact grammar often writes it in other pieces (SmolLM2 writes
``"title":"`` as ``"t``, ``it``, ``le``, ``":"``), so canonical drafts are rejected and each
rejected draft row is compute for nothing. Keys and punctuation repeat, though (every item of
an array of objects repeats every key; requests with one schema repeat all of them), and a
model writes the same text after the same context the same way. So a :class:`DraftMemory`
remembers, per forced text, the tokens the model emitted for it the last time, and a
:class:`DraftRecorder` (one per generation) proposes those before the canonical split and
records what the model really wrote.

A draft is only a guess: the decode loop verifies every draft token against the model's own
pick, so what is drafted changes how many forward passes run, never which tokens are written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

__all__ = ["DraftMemory", "DraftRecorder"]


class DraftMemory:
    """Forced text -> the token ids the model last emitted from its start (bounded, LRU).

    The tokens cover the text exactly, or a prefix of it when the model's next token ran past
    its end (merging the last forced characters with free text). One memory serves one model
    (one tokenizer); it may be shared by generations on several threads.
    """

    def __init__(self, capacity: int = 4096) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity}")
        self.capacity = capacity
        """The most forced texts remembered; the least recently used goes first."""
        self._entries: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def recall(self, text: str) -> tuple[int, ...] | None:
        """The tokens remembered for ``text``, or None."""
        with self._lock:
            tokens = self._entries.pop(text, None)
            if tokens is not None:
                self._entries[text] = tokens  # most recently used
            return tokens

    def remember(self, text: str, tokens: Sequence[int]) -> None:
        """Remember that the model wrote (a prefix of) ``text`` as ``tokens``."""
        if not text or not tokens:
            return
        with self._lock:
            self._entries.pop(text, None)
            self._entries[text] = tuple(tokens)
            if len(self._entries) > self.capacity:
                del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()


class DraftRecorder:
    """One generation's drafts: proposes them, and records the tokens the model emits.

    Call :meth:`propose` with the forced text before each forward pass that drafts, and
    :meth:`emitted` with every token the generation writes (drafted or picked), in order.
    A recording starts at a forced text and ends when the model's tokens have covered it or
    one runs past its end; the forced texts met on the way (its suffixes, after a rejected or
    cut-short draft) continue that recording rather than starting their own.
    """

    def __init__(self, memory: DraftMemory, decoded_vocab: Sequence[bytes]) -> None:
        self._memory = memory
        self._vocab = decoded_vocab
        self._key: str | None = None
        """The forced text being recorded (None: no recording)."""
        self._text = b""
        self._pos = 0
        """Bytes of ``_text`` covered by ``_tokens``."""
        self._tokens: list[int] = []
        self.from_memory = False
        """True when the latest proposal came from the memory (not the canonical split)."""

    def reset(self) -> None:
        """Forget the recording in progress (the output was rewound); the memory stays."""
        self._key, self._text, self._pos, self._tokens = None, b"", 0, []
        self.from_memory = False

    def propose(self, text: str, canonical: Callable[[str], list[int]]) -> list[int]:
        """The draft for the forced ``text``: remembered tokens if any, else ``canonical(text)``."""
        self.from_memory = False
        if not text:
            return []
        if self._key is not None:
            if self._text[self._pos :] == text.encode():
                # Still inside the recorded text: go on with what was remembered, if the model
                # has followed it so far.
                tokens = self._memory.recall(self._key)
                done = len(self._tokens)
                if tokens is not None and tuple(self._tokens) == tokens[:done]:
                    self.from_memory = True
                    return list(tokens[done:])
                return self._fallback(text, canonical)
            self._key = None  # lost track (should not happen): start over
        self._key, self._text, self._pos, self._tokens = text, text.encode(), 0, []
        return self._fallback(text, canonical)

    def _fallback(self, text: str, canonical: Callable[[str], list[int]]) -> list[int]:
        tokens = self._memory.recall(text)
        if tokens is not None:
            self.from_memory = True
            return list(tokens)
        return canonical(text)

    def emitted(self, token: int) -> None:
        """The generation wrote ``token`` (a confirmed draft or the model's own pick)."""
        if self._key is None:
            return
        piece = self._vocab[token] if 0 <= token < len(self._vocab) else b""
        if piece and self._text.startswith(piece, self._pos):
            self._tokens.append(token)
            self._pos += len(piece)
            if self._pos < len(self._text):
                return
        # Covered exactly, or this token runs past the end: the recording is complete. Each
        # suffix that starts at one of the model's token boundaries is remembered too: the
        # same tail comes back after other keys (``e":"`` ends ``"title":"`` and ``"name":"``).
        start = 0
        for i, done in enumerate(self._tokens):
            try:
                self._memory.remember(self._text[start:].decode(), self._tokens[i:])
            except UnicodeDecodeError:
                pass  # a boundary inside a character: no key there
            start += len(self._vocab[done])
        self._key = None
