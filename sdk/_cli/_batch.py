"""``fieldstream --input prompts.jsonl --output results.jsonl``: a file of requests, as a batch.

Each input line is ``{"id": ..., "prompt": ...}`` or ``{"id": ..., "messages": [...]}``. Each
output line is ``{"id": ..., "result": ..., "attempts": n, "usage": {...}}`` or ``{"id": ...,
"error": {...}, "attempts": n, "usage": {...}}`` (an input line that cannot be read also names
its ``line``), written and flushed the moment its request ends, in the order they end.

Interrupted (Ctrl-C, a crash), nothing already written is lost. Run again with the same output
file, the ids that have a result are skipped and only the rest run (a failed one runs again;
its newer line is the one that counts). A line cut short by a crash is removed first.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, Any, TextIO

import anyio

from sdk._backend import Usage
from sdk._batch import BatchInputError, BatchRequest, BatchResult, as_request
from sdk._cli._backends import BackendFactory, open_backend, request_options
from sdk._cli._exit import ExitCode, exit_code_for
from sdk._cli._progress import BatchProgress
from sdk._cli._report import JsonLinesReport, error_info, jsonable
from sdk._client import Client
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
    some failed (their errors are in the output), 2 when the files cannot be used, 3 when the
    backend cannot be started, 130 when interrupted."""
    source, target = Path(args.input), Path(args.output)
    try:
        done = _recover(target)
        total = None if args.input == "-" else _count(source)
        lines: AbstractContextManager[TextIO] = (
            nullcontext(stdin) if args.input == "-" else source.open(encoding="utf-8")
        )
        out = target.open("a", encoding="utf-8")
    except OSError as exc:
        stderr.write(f"fieldstream: error: {exc}\n")
        return ExitCode.USAGE
    with lines as text, out:
        results = _Results(out, progress)
        progress.start(None if total is None else max(total - len(done), 0), skipped=len(done))
        requests = _requests(text, done, system, results)
        try:
            return anyio.run(_run, args, schema, make_backend, requests, results)
        except KeyboardInterrupt:
            progress.stop("interrupted")
            return ExitCode.INTERRUPTED


async def _run(
    args: argparse.Namespace,
    schema: Any,
    make_backend: BackendFactory | None,
    requests: Iterator[BatchRequest],
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
            requests, schema=schema, concurrency=args.concurrency, **request_options(args)
        ) as finished,
    ):
        async for result in finished:
            results.write(result)
    results.progress.stop(None)
    return ExitCode.OK if results.tally.failed == 0 else ExitCode.OUTPUT_FAILED


class _Results:
    """Writes each outcome as one line, flushed at once, and keeps the tally."""

    def __init__(self, out: IO[str], progress: BatchProgress) -> None:
        self.out = out
        self.progress = progress
        self.tally = progress.tally

    def write(self, result: BatchResult[Any], *, line: int | None = None) -> None:
        record: dict[str, Any] = {"id": result.id}
        if line is not None:
            record["line"] = line
        if result.error is None:
            record["result"] = jsonable(result.value)
        else:
            record["error"] = error_info(result.error)
        record["attempts"] = result.attempts
        record["usage"] = _usage(result.usage)
        self.out.write(json.dumps(record, ensure_ascii=False, default=repr) + "\n")
        self.out.flush()
        self.tally.add(result)
        self.progress.update(result)


def _requests(
    lines: Iterable[str], done: set[str], system: str, results: _Results
) -> Iterator[BatchRequest]:
    """The input's requests, read lazily; a line that cannot be read gets its error line, an
    id that has a result already is skipped."""
    for number, line in enumerate(lines, 1):
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
        except BatchInputError as exc:
            rid = item.get("id") if isinstance(item, dict) else None
            results.write(BatchResult(None if rid is None else str(rid), error=exc), line=number)
            continue
        if request.id in done:
            continue
        yield request


def _recover(target: Path) -> set[str]:
    """The ids that have a result in ``target`` already; a last line cut short is removed."""
    if not target.exists():
        return set()
    done: set[str] = set()
    keep = 0  # bytes of complete lines
    with target.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # cut short by a crash: dropped below
            keep += len(raw)
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and "result" in record and record.get("id") is not None:
                done.add(str(record["id"]))
    if keep < target.stat().st_size:
        with target.open("r+b") as f:
            f.truncate(keep)
            os.fsync(f.fileno())
    return done


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
