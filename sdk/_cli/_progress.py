"""How a batch shows its progress: a rich progress bar on a terminal, JSON Lines otherwise.

Both count the same :class:`Tally`: requests done and failed, retries, tokens per second, and
an estimate of the time left. The JSON Lines form writes one ``{"event": "item", ...}`` line per
request as it ends and one ``{"event": "batch", ...}`` line at the end.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from sdk._batch import BatchResult

__all__ = ["BatchProgress", "JsonProgress", "RichProgress", "Tally"]


class Tally:
    """What a batch has done so far."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.total: int | None = None
        self.skipped = 0
        self.done = 0
        self.failed = 0
        self.retries = 0
        self.tokens = 0

    def add(self, result: BatchResult[Any]) -> None:
        self.done += 1
        self.failed += result.error is not None
        self.retries += max(result.attempts - 1, 0)
        self.tokens += result.usage.completion_tokens

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def tokens_per_second(self) -> float | None:
        seconds = self.seconds
        return self.tokens / seconds if seconds > 0 and self.tokens else None

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far (``None`` until something is done, or without a
        total)."""
        if self.total is None or not self.done:
            return None
        return max(self.total - self.done, 0) * self.seconds / self.done

    def summary(self) -> dict[str, Any]:
        rate = self.tokens_per_second
        return {
            "done": self.done,
            "failed": self.failed,
            "skipped": self.skipped,
            "retries": self.retries,
            "tokens": self.tokens,
            "tokens_per_s": None if rate is None else round(rate, 2),
            "seconds": round(self.seconds, 3),
        }


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or no such method
        return False


class BatchProgress(Protocol):
    """Shows a batch's progress."""

    tally: Tally
    err: TextIO
    """Where status lines go (loading a model, errors)."""

    def start(self, total: int | None, *, skipped: int) -> None: ...

    def update(self, result: BatchResult[Any]) -> None: ...

    def stop(self, problem: str | None) -> None: ...


class JsonProgress:
    """JSON Lines on ``out``: an ``item`` line per request, a ``batch`` line at the end."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.tally = Tally()

    def start(self, total: int | None, *, skipped: int) -> None:
        self.tally.total, self.tally.skipped = total, skipped

    def update(self, result: BatchResult[Any]) -> None:
        self._write(
            {
                "event": "item",
                "id": result.id,
                "ok": result.error is None,
                "attempts": result.attempts,
                "seconds": round(result.seconds, 3),
            }
        )

    def stop(self, problem: str | None) -> None:
        record: dict[str, Any] = {"event": "batch", **self.tally.summary()}
        if problem is not None:
            record["stopped"] = problem
        self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


class _AboveTheBar(io.StringIO):
    """The status lines of a batch under a progress bar (loading the model, ...): where they
    share the bar's terminal, each whole line is printed by rich above the bar while it is
    drawn, so that neither is written over the other (written to the terminal as they came,
    a line landed on the bar's own, and each one left a copy of the bar behind); elsewhere (a
    file, a pipe, or before and after the bar) they go to ``err`` as they are."""

    def __init__(self, err: TextIO, console: Any, live: Callable[[], bool]) -> None:
        super().__init__()
        self._err = err
        self._console = console
        self._live = live
        self._pending = ""

    def write(self, text: str) -> int:
        if not self._live():
            return self._err.write(text)
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        if self._pending and not self._live():
            self._err.write(self._pending)
            self._pending = ""
        self._err.flush()

    def isatty(self) -> bool:
        return self._err.isatty()


class RichProgress:
    """A rich progress bar: done of total, failed, retries, tokens/s, time left. Status lines
    written to :attr:`err` while it is drawn appear above it (:class:`_AboveTheBar`)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.err: TextIO = err
        self.tally = Tally()
        self._drawn = False
        self._progress = Progress(
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(file=out),
            transient=False,
        )
        self._task = self._progress.add_task("batch", total=None, status="")
        if _is_terminal(out) and _is_terminal(err):  # one screen, presumably: share it
            self.err = _AboveTheBar(err, self._progress.console, lambda: self._drawn)

    def start(self, total: int | None, *, skipped: int) -> None:
        self.tally.total, self.tally.skipped = total, skipped
        self._progress.update(self._task, total=total, status=self._status())
        self._progress.start()
        self._drawn = True

    def update(self, result: BatchResult[Any]) -> None:
        self._progress.update(self._task, completed=self.tally.done, status=self._status())

    def stop(self, problem: str | None) -> None:
        self._progress.update(self._task, completed=self.tally.done, status=self._status())
        self._progress.stop()
        self._drawn = False
        self.err.flush()
        if problem is not None:
            self.err.write(f"fieldstream: batch stopped: {problem}\n")

    def _status(self) -> str:
        t = self.tally
        parts = [f"[red]{t.failed} failed[/]" if t.failed else "0 failed", f"{t.retries} retries"]
        if t.skipped:
            parts.append(f"{t.skipped} skipped")
        rate = t.tokens_per_second
        if rate is not None:
            parts.append(f"{rate:.1f} tok/s")
        eta = t.eta
        if eta is not None:
            parts.append(f"ETA {eta:.0f} s")
        return " · ".join(parts)
