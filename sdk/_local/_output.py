"""The output of one generation, token by token: what each token wrote and where it ends.

A rewind needs to map a character offset of the text (what the consumer saw) back to a token
boundary of the model's output, and to the bytes the grammar matched. :class:`Output` keeps, per
emitted token, the character offset and the byte offset it ends at, and whether the UTF-8
decoder was between characters there (a *clean* boundary: a rewind can only stop at one, since a
token that ends inside a multi-byte character leaves half a character pending).
"""

from __future__ import annotations

import codecs
from bisect import bisect_right

__all__ = ["Output"]


def _decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("replace")


class Output:
    """Tokens written so far (the stop token excluded), with their text and end offsets."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.data = bytearray()
        """The bytes of every token, in order (what the grammar matched)."""
        self._texts: list[str] = []
        self._char_ends: list[int] = []
        self._byte_ends: list[int] = []
        self._clean: list[bool] = []
        self._chars = 0
        self._tail = ""
        self._utf8 = _decoder()

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def text(self) -> str:
        """The text written so far (an incomplete UTF-8 sequence at the end once flushed)."""
        return "".join(self._texts) + self._tail

    @property
    def chars(self) -> int:
        """Length of :attr:`text`."""
        return self._chars + len(self._tail)

    def append(self, token: int, piece: bytes) -> str:
        """Record ``token`` (which stands for the bytes ``piece``); return the text it completes
        (empty while a multi-byte character is incomplete)."""
        text = self._utf8.decode(piece)
        self.tokens.append(token)
        self.data += piece
        self._texts.append(text)
        self._chars += len(text)
        self._char_ends.append(self._chars)
        self._byte_ends.append(len(self.data))
        self._clean.append(not self._utf8.getstate()[0])
        return text

    def flush(self) -> str:
        """End of output: the replacement text of an incomplete UTF-8 sequence, if any."""
        self._tail = self._utf8.decode(b"", final=True)
        return self._tail

    def boundary(self, offset: int) -> int:
        """How many tokens to keep to cut the text back to ``offset``: the tokens that end at or
        before it, back to the last clean boundary (0: none)."""
        keep = bisect_right(self._char_ends, offset)
        while keep > 0 and not self._clean[keep - 1]:
            keep -= 1
        return keep

    def char_end(self, count: int) -> int:
        """Character offset where the first ``count`` tokens end."""
        return self._char_ends[count - 1] if count else 0

    def byte_end(self, count: int) -> int:
        """Byte offset where the first ``count`` tokens end."""
        return self._byte_ends[count - 1] if count else 0

    def byte_offset(self, offset: int) -> int:
        """The byte offset of character ``offset`` (at most the bytes written)."""
        keep = self.boundary(offset)
        head = "".join(self._texts[keep:])[: offset - self.char_end(keep)]
        return min(self.byte_end(keep) + len(head.encode()), len(self.data))

    def token_at(self, byte: int) -> int:
        """Index of the token that holds byte ``byte`` (``byte < len(data)``)."""
        return bisect_right(self._byte_ends, byte)

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` tokens (a clean boundary) and forget the rest."""
        del self.tokens[keep:], self._texts[keep:], self._clean[keep:]
        del self._char_ends[keep:], self._byte_ends[keep:]
        del self.data[self.byte_end(keep) :]
        self._chars = self.char_end(keep)
        self._tail = ""
        self._utf8 = _decoder()
