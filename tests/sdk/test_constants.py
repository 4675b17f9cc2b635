"""Defaults have one home: every entry point's default reads ``sdk._constants``."""

from __future__ import annotations

import ast
import inspect
import pathlib

import sdk
from sdk import _constants
from sdk._batch import run_batch
from sdk._cli._args import build_parser
from sdk._http._transport import DEFAULT_TIMEOUT, LIMITS
from sdk._options import StreamConfig
from sdk._regex._ecma import compile_ecma, pattern_limit
from sdk._schema._compile import compile_schema
from sdk._stream._dispatch import Dispatcher


def default(func: object, name: str) -> object:
    return inspect.signature(func).parameters[name].default  # type: ignore[arg-type]


def test_max_retries_is_written_once() -> None:
    for entry in (sdk.Client, sdk.Client.from_backend, sdk.SyncClient, sdk.SyncClient.from_backend):
        assert default(entry, "max_retries") == _constants.DEFAULT_MAX_RETRIES, entry
    for entry in (sdk.Client.from_openai, sdk.SyncClient.from_openai):
        assert default(entry, "max_retries") == _constants.WRAPPED_MAX_RETRIES, entry
    args = build_parser().parse_args(["--schema", "{}", "hi"])
    assert args.retries == _constants.DEFAULT_MAX_RETRIES
    assert args.concurrency is None  # the local engine's slots, else DEFAULT_CLI_CONCURRENCY


def test_the_other_defaults_read_the_constants() -> None:
    retry = sdk.Retry()
    assert (
        retry.max_attempts,
        retry.backoff,
        retry.multiplier,
        retry.max_delay,
        retry.jitter,
    ) == (
        _constants.DEFAULT_MAX_ATTEMPTS,
        _constants.DEFAULT_BACKOFF,
        _constants.DEFAULT_MULTIPLIER,
        _constants.DEFAULT_MAX_DELAY,
        _constants.DEFAULT_JITTER,
    )
    assert StreamConfig().max_concurrency == _constants.DEFAULT_CALLBACK_CONCURRENCY
    assert default(Dispatcher, "max_concurrency") == _constants.DEFAULT_CALLBACK_CONCURRENCY
    assert default(sdk.Client.batch, "concurrency") is None  # the backend's slots, else:
    assert sdk.Client.from_backend(object())._batch_concurrency() == (  # type: ignore[arg-type]
        _constants.DEFAULT_BATCH_CONCURRENCY
    )
    assert default(run_batch, "concurrency") == _constants.DEFAULT_BATCH_CONCURRENCY
    assert default(compile_schema, "max_pattern_size") == _constants.DEFAULT_MAX_PATTERN_SIZE
    assert default(compile_ecma, "max_size") == _constants.DEFAULT_MAX_PATTERN_SIZE
    assert pattern_limit.get() == _constants.DEFAULT_MAX_PATTERN_SIZE
    assert (DEFAULT_TIMEOUT.read, DEFAULT_TIMEOUT.connect) == (
        _constants.DEFAULT_TIMEOUT,
        _constants.DEFAULT_CONNECT_TIMEOUT,
    )
    assert (
        LIMITS.max_connections,
        LIMITS.max_keepalive_connections,
        LIMITS.keepalive_expiry,
    ) == (
        _constants.DEFAULT_MAX_CONNECTIONS,
        _constants.DEFAULT_MAX_KEEPALIVE_CONNECTIONS,
        _constants.DEFAULT_KEEPALIVE_EXPIRY,
    )


SHARED = {
    "max_retries",
    "concurrency",
    "max_concurrency",
    "max_attempts",
    "max_delay",
    "max_pattern_size",
    "max_size",
}
# Numbers that are not a shared default: the live view draws one answer when no Retry is given;
# a stream over a caller's own source (no client, no transport) retries no transport.
NOT_SHARED = {"_cli/_live.py max_attempts=1", "_options.py max_retries=0"}


def test_no_signature_writes_a_shared_default_as_a_number() -> None:
    # A literal default for one of the shared names, anywhere in sdk/, is a second home.
    root = pathlib.Path(sdk.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                pairs = list(zip(args.args[::-1], args.defaults[::-1], strict=False))
                pairs += [
                    (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d
                ]
                for arg, value in pairs:
                    if arg.arg in SHARED and isinstance(value, ast.Constant):
                        found.append(f"{path.relative_to(root)} {arg.arg}={value.value}")
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.target.id in SHARED and isinstance(node.value, ast.Constant):
                    found.append(f"{path.relative_to(root)} {node.target.id}={node.value.value}")
    found = [f for f in found if not f.endswith("=None")]  # "not given", not a default
    assert sorted(set(found) - NOT_SHARED) == []
    assert set(found) == NOT_SHARED  # the list above stays true
