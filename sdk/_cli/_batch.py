"""``fieldstream --input prompts.jsonl --output results.jsonl``: a file of requests, as a batch.

Each input line is ``{"id": ..., "prompt": ...}`` or ``{"id": ..., "messages": [...]}``; the id
is a string or an integer, and is given back as it came. Each output line is ``{"id": ...,
"result": ..., "attempts": n, "usage": {...}}`` or ``{"id": ..., "error": {...}, "attempts": n,
"usage": {...}}``; an input line that cannot be run (not UTF-8, not JSON, no id or prompt, an
id already used on an earlier line) gets an error line that names its ``line`` (and its ``id``
when it has a usable one). Lines are written and flushed the moment their request ends, in
the order they end.

Interrupted (Ctrl-C, SIGTERM, a crash), nothing already written is lost. Run again with the
same output file and only what has no result runs again. Whatever the runs, crashes and
resumes, the output holds one line per input id (its latest outcome) and one error line per
input line that cannot be run, never two lines for the same thing: a rerun first rewrites the
output (atomically: a new file renamed over the old) to keep only the results (the latest per
id) and drop the error lines (those requests run again; bad lines are reported again), and a
last line cut short by a crash is removed, with a warning on stderr. The input is read up to
its first request left to run before the backend starts: a rerun with nothing left loads no
model.

A write that fails (a full disk) stops the batch with a message on stderr and exit status 2
(the files cannot be used); what was written stays, and a rerun resumes from it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

import anyio

from sdk._backend import Usage
from sdk._batch import BatchInputError, BatchRequest, BatchResult, as_request
from sdk._cli._backends import BackendFactory, open_backend, request_options
from sdk._cli._exit import ExitCode, exit_code_for
from sdk._cli._progress import BatchProgress
from sdk._cli._report import JsonLinesReport, error_info, jsonable
from sdk._cli._signals import Terminated, until_sigterm
from sdk._client import Client
from sdk._constants import DEFAULT_CLI_CONCURRENCY
from sdk._errors import StreamError

__all__ = ["run_batch_command"]


def run_batch_command(
    args: argparse.Namespace,
    schema: Any,
    system: str,
    make_backend: BackendFactory | None,
    progress: BatchProgress,
    stdin: TextIO,
    stderr: TextIO,
) -> int:
    """Run the batch the arguments name; the exit code: 0 when every request succeeded, 1 when
    some failed (their errors are in the output, and stderr says how many), 2 when the files
    cannot be used (read, or written: a full disk), 3 when the backend cannot be started, 130
    when interrupted, 143 when terminated (SIGTERM)."""
    source, target = Path(args.input), Path(args.output)
    try:
        recovered = _recover(target)
        total = None if args.input == "-" else _count(source)
        lines: Iterable[bytes | str]
        if args.input == "-":
            lines = getattr(stdin, "buffer", stdin)  # bytes where there are bytes: UTF-8 is ours
            closing: IO[Any] | None = None
        else:
            lines = closing = source.open("rb")
        out = target.open("a", encoding="utf-8")
    except OSError as exc:
        stderr.write(f"fieldstream: error: {exc}\n")
        return ExitCode.USAGE
    if recovered.cut:
        stderr.write(
            f"fieldstream: warning: {target}: removed a last line cut short by an earlier run "
            f"({recovered.cut} bytes); its request runs again\n"
        )
    results = _Results(out, progress)
    try:
        progress.start(
            None if total is None else max(total - len(recovered.done), 0),
            skipped=len(recovered.done),
        )
        requests = _requests(lines, recovered.done, system, results)
        try:
            # What is left, before any backend: a rerun of a finished batch loads no model.
            head = next(requests, None)
            if head is None:
                code = _finish(results)
            else:
                pending = itertools.chain([head], requests)
                code = anyio.run(
                    until_sigterm, lambda: _run(args, schema, make_backend, pending, results)
                )
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            progress.stop("terminated (SIGTERM)" if terminated else "interrupted")
            return ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED
    finally:
        if closing is not None:
            closing.close()
        try:
            out.close()
        except OSError as exc:  # the last flush failed: said below, as a failed write
            results.broken = results.broken or exc
    if results.broken is not None:
        stderr.write(
            f"fieldstream: error: cannot write to {target}: {results.broken}; the batch "
            "stopped. What was written is kept: free the space and run the same command "
            "again to resume\n"
        )
        return ExitCode.USAGE
    tally = results.tally
    if tally.failed:
        first = results.first_error
        every = "every request" if tally.failed == tally.done else "some requests"
        stderr.write(
            f"fieldstream: {every} failed ({tally.failed} of {tally.done}); their errors are "
            f"in {target}" + (f"; the first: {first}" if first else "") + "\n"
        )
    return code


async def _run(
    args: argparse.Namespace,
    schema: Any,
    make_backend: BackendFactory | None,
    requests: Iterable[BatchRequest],
    results: _Results,
) -> int:
    status = JsonLinesReport(results.progress.err, results.progress.err)
    try:
        backend = await open_backend(args, status, make_backend)
    except StreamError as exc:
        results.progress.stop(f"backend unavailable: {exc}")
        return exit_code_for(exc)
    async with (
        Client.from_backend(backend) as client,
        client.batch(
            requests,
            schema=schema,
            concurrency=args.concurrency or getattr(backend, "slots", DEFAULT_CLI_CONCURRENCY),
            **request_options(args),
        ) as finished,
    ):
        async for result in finished:
            results.write(result)
            if results.broken is not None:
                break  # leaving the block stops the requests still running
    return _finish(results)


def _finish(results: _Results) -> int:
    """End the progress display (saying why when the output cannot be written); the exit code
    of what ran."""
    problem = None if results.broken is None else f"cannot write the output: {results.broken}"
    results.progress.stop(problem)
    return ExitCode.OK if results.tally.failed == 0 else ExitCode.OUTPUT_FAILED


class _Results:
    """Writes each outcome as one line, flushed at once, and keeps the tally. A write that
    fails is kept in ``broken`` (nothing more is written), not raised: the batch stops and
    the command says why."""

    def __init__(self, out: IO[str], progress: BatchProgress) -> None:
        self.out = out
        self.progress = progress
        self.tally = progress.tally
        self.broken: OSError | None = None
        self.first_error: str | None = None

    def write(self, result: BatchResult[Any], *, line: int | None = None) -> None:
        if self.broken is not None:
            return
        record: dict[str, Any] = {"id": result.id}
        if line is not None:
            record["line"] = line
        if result.error is None:
            record["result"] = jsonable(result.value)
        else:
            record["error"] = error_info(result.error)
            if self.first_error is None:
                self.first_error = f"{type(result.error).__name__}: {result.error}"
        record["attempts"] = result.attempts
        record["usage"] = _usage(result.usage)
        try:
            self.out.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
            self.out.flush()
        except OSError as exc:
            self.broken = exc
            return
        self.tally.add(result)
        self.progress.update(result)


def _requests(
    lines: Iterable[bytes | str], done: set[str | int], system: str, results: _Results
) -> Iterator[BatchRequest]:
    """The input's requests, read lazily; a line that cannot be run gets its error line (with
    its line number), an id that has a result already is skipped."""
    seen: dict[str | int, int] = {}  # id -> the line it was first on
    for number, raw in enumerate(lines, 1):
        if results.broken is not None:
            return
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 1].hex() if isinstance(raw, bytes) else "?"
            error = BatchInputError(
                f"line {number} is not UTF-8 text: byte 0x{bad} at column {exc.start + 1}"
            )
            results.write(BatchResult(None, error=error), line=number)
            continue
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            error = BatchInputError(f"line {number} is not JSON: {exc}")
            results.write(BatchResult(None, error=error), line=number)
            continue
        try:
            request = as_request(item, system=system)
            first = seen.get(request.id)
            if first is not None:
                raise BatchInputError(
                    f"request id {request.id!r} is repeated (first on line {first})"
                )
        except BatchInputError as exc:
            rid = item.get("id") if isinstance(item, dict) else None
            usable = isinstance(rid, (str, int)) and not isinstance(rid, bool) and rid != ""
            results.write(BatchResult(rid if usable else None, error=exc), line=number)
            continue
        seen[request.id] = number
        if request.id in done:
            continue
        yield request


@dataclass
class _Recovered:
    done: set[str | int] = field(default_factory=set)
    """The ids that have a result."""
    cut: int = 0
    """Bytes of a last line cut short, removed."""


def _recover(target: Path) -> _Recovered:
    """Make ``target`` ready for a rerun (see the module docstring): the results kept (the
    latest per id), error lines and a last line cut short dropped, rewritten atomically when
    anything changed. Not a regular file (a pipe, a device): left alone."""
    recovered = _Recovered()
    if not target.is_file():
        return recovered
    data = target.read_bytes()
    complete, _, tail = data.rpartition(b"\n")
    recovered.cut = len(tail)
    kept: dict[Any, bytes] = {}  # result lines by id (the latest), and lines not ours
    for number, raw in enumerate(complete.split(b"\n") if complete else []):
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        if not isinstance(record, dict) or ("result" not in record and "error" not in record):
            kept[("line", number)] = raw  # not a record of ours: kept as it is
            continue
        rid = record.get("id")
        if "result" in record and isinstance(rid, (str, int)) and not isinstance(rid, bool):
            kept.pop(("id", rid), None)  # the latest result of an id is the one kept
            kept[("id", rid)] = raw
            recovered.done.add(rid)
    text = b"".join(raw + b"\n" for raw in kept.values())
    if text != data:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            os.chmod(temporary, target.stat().st_mode & 0o7777)  # mkstemp's file is 0600
            with os.fdopen(handle, "wb") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return recovered


def _count(source: Path) -> int:
    with source.open("rb") as f:
        return sum(1 for line in f if line.strip())


def _usage(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }
    if usage.estimated:
        out["estimated"] = True
    return out
