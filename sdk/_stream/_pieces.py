"""The text of one part of an attempt's output, kept as it came, in memory linear in its size."""

from __future__ import annotations

__all__ = ["FOLD", "Pieces"]

FOLD = 32
"""How many pieces of text a part keeps as they came before joining them into one block."""


class Pieces(list[str]):
    """The text of one part of the output (the message, a tool call) as it came: the newest
    pieces as a list, older ones joined into blocks of :data:`FOLD` pieces, so a long output
    holds a few objects per hundred tokens instead of one per token (a ``str`` costs ~50 bytes
    besides its characters), and joining stays linear."""

    __slots__ = ("blocks",)

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []

    def add(self, text: str) -> None:
        """Append ``text``; every :data:`FOLD` pieces, join them into a block."""
        self.append(text)
        if len(self) == FOLD:
            self.fold()

    def fold(self) -> None:
        """Join the pieces kept as they came into one block. (The stream's per-chunk path
        appends and calls this itself at :data:`FOLD` pieces: what :meth:`add` does, less a
        call per chunk.)"""
        self.blocks.append("".join(self))
        self.clear()

    def joined(self) -> str:
        """The whole text."""
        return "".join(self.blocks) + "".join(self)
