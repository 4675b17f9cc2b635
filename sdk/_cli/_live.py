"""The command's live terminal view (rich): the partial object as it grows, each field ticked
when final with the time it became final, failed attempts and retries, values repaired in place
(``--backtrack``: the rejected text struck through, with the reason, then the value written
instead, marked "repaired"), tokens per second.

:class:`LiveView` is a :class:`~sdk._cli._report.Report`. It redraws on every event and on the
command's periodic ticks (it never refreshes on its own thread, so everything it reads belongs
to the event loop's thread). While the output streams it shows the tail of the partial value
and the latest fields so the frame fits the terminal; the last frame shows everything: the
validated result, every field and every failed attempt, and stays on screen.

Needs ``rich`` (the ``cli`` extra); the command falls back to JSON Lines without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, cast

from rich.console import Console, Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from sdk._cli._report import RunSummary, jsonable
from sdk._errors import Path
from sdk._events import AttemptFailed, Backtracked, FieldEvent

__all__ = ["LiveView"]

_MIN_SNAPSHOT_LINES = 6
_LIVE_ROWS = 8


class LiveView:
    """The live view of one run. Use it as a context manager around the stream.

    ``console`` is where the view draws (stdout's terminal); ``err`` where status lines go
    (stderr), ``title`` names what streams (e.g. ``"Person · local SmolLM2-135M"``),
    ``max_attempts`` the retry policy's, ``rate`` reports tokens so far and tokens per second.
    """

    def __init__(
        self,
        console: Console,
        *,
        err: Console | None = None,
        title: str,
        max_attempts: int = 1,
        rate: Callable[[], tuple[int, float | None]] | None = None,
    ) -> None:
        self._console = console
        self._err = err if err is not None else Console(stderr=True)
        self._title = title
        self._max_attempts = max_attempts
        self._rate = rate
        self._snapshot: Any = None
        self._attempt = 1
        self._t = 0.0
        # What happened, in order: fields that became final, attempts that failed, values
        # rejected and rewritten in place.
        self._rows: list[tuple[FieldEvent | AttemptFailed | Backtracked, float]] = []
        self._repairing: list[Path] = []  # rewound places whose new value is still to come
        self._repaired: set[int] = set()  # ids of the field events that repaired one
        self._final: RenderableType | None = None
        self._live: Live | None = None
        self._highlight = JSONHighlighter()

    # -- the context manager ----------------------------------------------------------------

    def __enter__(self) -> LiveView:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- Report -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start drawing (on the console given)."""
        if self._live is not None:
            return
        self._live = Live(
            get_renderable=self._render,
            console=self._console,
            auto_refresh=False,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def stop(self) -> None:
        """Draw the last frame, whole, and stop."""
        live, self._live = self._live, None
        if live is not None:
            # The last frame is printed whole, whatever the terminal's height.
            live.vertical_overflow = "visible"
            live.refresh()
            live.stop()

    def status(self, message: str) -> None:
        self._err.print(Text.assemble(("fieldstream: ", "dim"), message))

    def busy(self, message: str) -> AbstractContextManager[None]:
        # A spinner on stderr's terminal (rich draws it from its own thread while the
        # event loop waits on the blocking work).
        return cast(AbstractContextManager[None], self._err.status(message))

    def field(self, event: FieldEvent, t: float) -> None:
        self._t = t
        if event.path:  # the root is the result, shown at the end
            self._rows.append((event, t))
            # The first value written where the output was rewound is the repair.
            for where in self._repairing:
                if event.path[: len(where)] == where:
                    self._repairing.remove(where)
                    self._repaired.add(id(event))
                    break
        self._refresh()

    def attempt_failed(self, event: AttemptFailed, t: float) -> None:
        self._t = t
        self._rows.append((event, t))
        if event.retrying:
            self._attempt = event.attempt + 1
            self._snapshot = None
        self._refresh()

    def backtracked(self, event: Backtracked, t: float) -> None:
        self._t = t
        rows = self._rows
        # This row tells the failure of its attempt: it takes the place of the plain one.
        if rows and isinstance(rows[-1][0], AttemptFailed) and rows[-1][0].attempt == event.attempt:
            rows.pop()
        rows.append((event, t))
        self._repairing.append(event.path)
        self._attempt = event.attempt + 1
        self._refresh()

    def tick(self, snapshot: Any, attempt: int, t: float) -> None:
        self._snapshot = snapshot
        self._attempt = max(attempt, 1)
        self._t = t
        self._refresh()

    def result(self, value: Any, summary: RunSummary, t: float) -> None:
        self._t = t
        body = self._json(jsonable(value), tail=None)
        title = Text.assemble(("✓ ", "bold green"), (self._title, "bold"))
        self._final = Group(
            Panel(body, title=title, title_align="left", border_style="green"),
            self._table(None),
            Text.assemble(("done ", "green"), self._numbers(summary, t)),
        )
        self._refresh()

    def error(self, error: BaseException, code: int, summary: RunSummary, t: float) -> None:
        self._t = t
        panel: list[RenderableType] = []
        if self._snapshot is not None:
            title = Text.assemble(("✗ ", "bold red"), (self._title, "bold"))
            panel.append(
                Panel(
                    self._json(self._snapshot, tail=None),
                    title=title,
                    title_align="left",
                    border_style="red",
                )
            )
        self._final = Group(
            *panel,
            self._table(None),
            Text.assemble(
                ("✗ failed ", "bold red"),
                (f"({type(error).__name__}): ", "red"),
                str(error),
                (f"   exit {code}", "dim"),
            ),
            Text(self._numbers(summary, t), style="dim"),
        )
        self._refresh()

    # -- drawing ----------------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()
        elif self._final is not None:
            # Not drawing (the run failed before the stream began): print the verdict.
            self._console.print(self._final)

    def _render(self) -> RenderableType:
        if self._final is not None:
            return self._final
        height = self._console.size.height
        rows = self._table(_LIVE_ROWS)
        room = height - min(len(self._rows), _LIVE_ROWS + 1) * 2 - 4
        title = Text.assemble(("… ", "yellow"), (self._title, "bold"))
        body: RenderableType
        if self._snapshot is None and self._rows and isinstance(self._rows[-1][0], Backtracked):
            # Until the next tick brings the kept part of the output.
            body = Text(f"rewound: rewriting {self._rows[-1][0].pointer or '/'}…", style="yellow")
        elif self._snapshot is None:
            body = Text("waiting for the first token…", style="dim")
        else:
            body = self._json(self._snapshot, tail=max(room, _MIN_SNAPSHOT_LINES))
        return Group(
            Panel(body, title=title, title_align="left", border_style="yellow"),
            rows,
            Text(self._progress(), style="dim"),
        )

    def _json(self, value: Any, *, tail: int | None) -> Text:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=repr)
        lines = text.splitlines()
        if tail is not None and len(lines) > tail:
            # The value grows at its end: show the end.
            text = "\n".join(["…", *lines[-(tail - 1) :]])
        return self._highlight(Text(text))

    def _table(self, last: int | None) -> RenderableType:
        """One row per final field (✓ pointer, value, when) or failed attempt (✗), in order;
        only the ``last`` rows while streaming."""
        table = Table.grid(padding=(0, 1))
        table.add_column(width=1, no_wrap=True)
        table.add_column(style="cyan", no_wrap=True)
        table.add_column(ratio=1)
        table.add_column(justify="right", style="dim", no_wrap=True)
        rows = self._rows
        if last is not None and len(rows) > last:
            table.add_row("", Text(f"… {len(rows) - last} more", style="dim"), "", "")
            rows = rows[-last:]
        for row, t in rows:
            when = f"{t:6.2f} s"
            if isinstance(row, Backtracked):
                error = row.error
                reason = f"{error.keyword}: {error.message}" if error.keyword else error.message
                message = Text.assemble(
                    (row.text, "red strike"),
                    "  ",
                    (reason, "red"),
                    (
                        f" → rewound, rewriting in place (attempt {row.attempt + 1} of "
                        f"{self._max_attempts})",
                        "yellow",
                    ),
                )
                table.add_row(
                    Text("↺", style="yellow"), Text(row.pointer or "/", style="red"), message, when
                )
                continue
            if isinstance(row, AttemptFailed):
                then = (
                    f" → retrying (attempt {row.attempt + 1} of {self._max_attempts})"
                    if row.retrying
                    else ""
                )
                message = Text.assemble(
                    f"{type(row.error).__name__}: {row.error}", (then, "yellow")
                )
                table.add_row(
                    Text("✗", style="red"),
                    Text(f"attempt {row.attempt}", style="red"),
                    message,
                    when,
                )
                continue
            if row.attempt > 1:
                when += f" (attempt {row.attempt})"
            value = Text(_short(row.value), no_wrap=True, overflow="ellipsis")
            if id(row) in self._repaired:
                value = Text.assemble(value, ("  repaired", "yellow"))
            table.add_row(Text("✓", style="green"), row.pointer, value, when)
        return table

    def _progress(self) -> str:
        parts = [f"attempt {self._attempt}/{self._max_attempts}"]
        if self._rate is not None:
            tokens, rate = self._rate()
            parts.append(f"{tokens} tokens")
            if rate is not None:
                parts.append(f"{rate:.1f} tok/s")
        parts.append(f"{self._t:.2f} s")
        return " · ".join(parts)

    def _numbers(self, summary: RunSummary, t: float) -> str:
        parts = [f"in {t:.2f} s", f"{summary.attempts} attempt{'s' * (summary.attempts != 1)}"]
        tokens = summary.usage.completion_tokens or summary.tokens
        if tokens:
            parts.append(f"{tokens} tokens")
        if summary.usage.forced_tokens:
            parts.append(f"{summary.usage.forced_tokens} forced")
        if summary.rate is not None:
            parts.append(f"{summary.rate:.1f} tok/s")
        return " · ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return f"{{{len(value)} key{'s' * (len(value) != 1)}}}"
    if isinstance(value, list):
        return f"[{len(value)} item{'s' * (len(value) != 1)}]"
    return json.dumps(value, ensure_ascii=False)
