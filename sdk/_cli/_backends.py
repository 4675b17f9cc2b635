"""The backend and the request options the command line names (both modes share them)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import anyio

from sdk._backend import Backend
from sdk._cli._report import Report
from sdk._errors import BackendError
from sdk._options import RequestOptions
from sdk._providers import DEFAULT_PROVIDER, provider_backend
from sdk._retry import Retry

__all__ = ["BackendFactory", "open_backend", "request_options", "uses_server"]

BackendFactory = Callable[[argparse.Namespace, Report], Backend]
"""Makes the backend for parsed arguments (tests inject a fake one)."""


def uses_server(args: argparse.Namespace) -> bool:
    """Whether the arguments name a server (``--base-url`` or ``--provider``), not the local
    engine."""
    return args.base_url is not None or args.provider is not None


def request_options(args: argparse.Namespace) -> RequestOptions:
    """What every request of the run is sent with, and its retry policy."""
    options: dict[str, Any] = {
        "retry": (
            Retry(max_attempts=args.retries + 1, backtrack=args.backtrack) if args.retries else None
        ),
        "max_retries": args.retries,  # transport failures in a row: the same count
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "top_p": args.top_p,
        "seed": args.seed,
        "mode": args.mode if uses_server(args) else "json_schema",
        "show_schema": args.show_schema,
    }
    return options  # type: ignore[return-value]


async def open_backend(
    args: argparse.Namespace, report: Report, make_backend: BackendFactory | None
) -> Backend:
    """The backend the arguments name (the local engine is loaded first)."""
    if make_backend is not None:
        return make_backend(args, report)
    if args.provider is not None:
        key = args.api_key or os.environ.get("FIELDSTREAM_API_KEY")
        return provider_backend(args.provider, args.base_url, key, args.model, "chat", {})
    if args.base_url is not None:  # the default provider: an OpenAI-compatible server
        key = args.api_key
        if key is None:
            key = os.environ.get("FIELDSTREAM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return provider_backend(DEFAULT_PROVIDER, args.base_url, key, args.model, "chat", {})
    return await _local_backend(args, report)


async def _local_backend(args: argparse.Namespace, report: Report) -> Backend:
    """The local engine, loaded now (converting the model first if it must), with progress:
    the first load of the default model converts it, which takes a while."""
    from sdk._local import LocalBackend, pending_conversion

    backend = LocalBackend(
        model=args.model,
        device=args.device,
        runtime=args.runtime,
        jump_forward=not args.no_jump_forward,
    )
    what = args.model or "SmolLM2-135M-Instruct (the default model)"
    target = pending_conversion(args.model, runtime=args.runtime, device=args.device)
    if target is not None:
        report.status(
            f"first use of {what}: converting it to safetensors in {target} (once; later "
            "runs load it in seconds)"
        )
    if _runtime_ahead(args) != "llama.cpp":  # llama.cpp's runtime imports no transformers
        _quiet_transformers()
    started = time.monotonic()
    with report.busy(f"loading {what}…"):
        engine = await anyio.to_thread.run_sync(backend.load)
    loaded = engine.loaded
    report.status(
        f"loaded {what} on {loaded.device} ({loaded.runtime}) in {time.monotonic() - started:.1f} s"
    )
    return backend


def _runtime_ahead(args: argparse.Namespace) -> str | None:
    """The runtime the load will choose (None when the arguments name none: it says why)."""
    from sdk._local._model import choose_runtime

    try:
        return choose_runtime(args.runtime, args.model, args.device)
    except (ValueError, BackendError):
        return None


def _quiet_transformers() -> None:
    """No progress bars of transformers' own ("Loading weights", "Converting") through the
    command's output: it says what it loads and how long that took itself. Only the command
    does this (a library call leaves transformers' settings alone)."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # the llama.cpp runtime, or a missing extra the load will name
        return
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
