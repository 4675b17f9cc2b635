"""The batch command against hostile input and failing files (issue 20): a line that is not
UTF-8, a full disk, reruns after failures and crashes (one line per id, one error line per bad
input line, whatever happened), ids given back as they came, duplicate ids, a line cut short,
a job that fails throughout, SIGTERM."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sdk import BatchRequest, Client
from sdk._cli._main import run
from tests.sdk.cli.test_batch import PERSON, ROOT, Backend, batch


def test_a_line_that_is_not_utf8_gets_its_error_line_and_the_rest_run(tmp_path: Path) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(
        b'{"id": "a", "prompt": "Ada"}\n'
        b'{"id": "b", "prompt": "Bj\xf8rn"}\n'  # Latin-1, not UTF-8
        b'{"id": "c", "prompt": "Cy"}\n'
    )
    err = io.StringIO()
    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target), "--retries", "0"],
        make_backend=lambda args, report: Backend(),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert code == 1
    written = [json.loads(line) for line in target.read_text().splitlines()]
    [bad] = [w for w in written if "error" in w]
    assert bad["line"] == 2 and bad["id"] is None
    assert "not UTF-8" in bad["error"]["message"] and "0xf8" in bad["error"]["message"]
    assert sorted(w["id"] for w in written if "result" in w) == ["a", "c"]
    assert "1 of 3" in err.getvalue()


def test_a_full_disk_stops_the_batch_with_exit_2_and_a_message(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": i, "prompt": f"P{i}"}) + "\n" for i in range(4)))
    err, out = io.StringIO(), io.StringIO()
    code = run(  # /dev/full: every write fails with ENOSPC, as on a full disk
        ["-s", PERSON, "--input", str(source), "--output", "/dev/full", "--retries", "0"],
        make_backend=lambda args, report: Backend(),
        stdout=out,
        stderr=err,
    )
    assert code == 2
    assert "cannot write to /dev/full" in err.getvalue()
    assert "No space left on device" in err.getvalue()
    assert "Traceback" not in err.getvalue()
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert summary["event"] == "batch" and "cannot write" in summary["stopped"]


class Flaky(Backend):
    """Fails (a violation) the prompts drawn by ``rng`` for this run."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing = failing

    async def generate(self, request: Any) -> Any:
        prompt = request.messages[-1]["content"]
        if prompt in self.failing:
            request.messages[-1]["content"] = "old"  # the base class writes age 130 for it
        async for delta in super().generate(request):
            yield delta


def test_reruns_and_crashes_leave_one_line_per_id_and_per_bad_line(tmp_path: Path) -> None:
    ids: list[Any] = [*(f"r{i}" for i in range(8)), 8, 9]  # numeric ids too
    lines = [json.dumps({"id": rid, "prompt": f"P{rid}"}) for rid in ids]
    lines[3:3] = ["{not json", json.dumps({"id": "r1", "prompt": "again"}), '{"id": "x"}']
    bad_lines = {4, 5, 6}  # 1-based: not JSON, a repeated id, no prompt
    target = tmp_path / "out.jsonl"
    rng = random.Random(20)
    for run_number in range(8):
        failing = {f"P{rid}" for rid in ids if rng.random() < 0.4}
        batch(tmp_path, lines, "--concurrency", "3", backend=Flaky(failing))
        written = [json.loads(line) for line in target.read_text().splitlines() if line]
        # One line per input id, one per bad line: never two for the same thing.
        per_id = Counter(json.dumps(w["id"]) for w in written if "line" not in w)
        assert sorted(per_id.elements()) == sorted(json.dumps(rid) for rid in ids)
        per_line = Counter(w["line"] for w in written if "line" in w)
        assert per_line == dict.fromkeys(bad_lines, 1)
        # Each id's line is its latest outcome: this run's failures are errors now.
        assert {w["id"] for w in written if "error" in w and "line" not in w} <= {
            rid for rid in ids if f"P{rid}" in failing
        }
        # Ids come back as they came.
        assert {type(w["id"]) for w in written if w["id"] in (8, 9)} == {int}
        if run_number % 3 == 1:  # a crash in the middle of writing a line
            with target.open("a") as f:
                f.write('{"id": "r5", "resu')


def test_a_repeated_id_names_its_id_and_both_lines_even_after_a_rerun(tmp_path: Path) -> None:
    lines = [json.dumps({"id": "a", "prompt": "A"}), json.dumps({"id": "a", "prompt": "B"})]
    for _ in range(2):  # the second run skips "a" (it has a result) yet still reports line 2
        code, written, _, _ = batch(tmp_path, lines)
        [dup] = [w for w in written if "error" in w]
        assert (dup["id"], dup["line"]) == ("a", 2)
        assert "first on line 1" in dup["error"]["message"]
        assert code == 1


@pytest.mark.anyio
async def test_the_library_batch_names_a_repeated_request_objects_id() -> None:
    requests = [BatchRequest(5, [{"role": "user", "content": "A"}])] * 2
    async with (
        Client.from_backend(Backend()) as client,
        client.batch(requests, schema={"type": "object"}) as results,
    ):
        got = [r async for r in results]
    assert sorted((r.id, r.ok) for r in got) == [(5, False), (5, True)]


def test_a_line_cut_short_is_removed_with_a_warning(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text(json.dumps({"id": "a", "result": {}}) + '\n{"id": "b", "res')
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "b", "prompt": "Bo"}) + "\n")
    err = io.StringIO()
    run(
        ["-s", PERSON, "--input", str(source), "--output", str(target)],
        make_backend=lambda args, report: Backend(),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert "removed a last line cut short" in err.getvalue() and "(16 bytes)" in err.getvalue()
    assert [json.loads(x)["id"] for x in target.read_text().splitlines()] == ["a", "b"]


def test_a_job_whose_every_request_fails_says_so_on_stderr(tmp_path: Path) -> None:
    lines = [json.dumps({"id": i, "prompt": "old"}) for i in range(3)]
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("\n".join(lines) + "\n")
    err = io.StringIO()
    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target), "--retries", "0"],
        make_backend=lambda args, report: Backend(),
        stdout=io.StringIO(),
        stderr=err,
    )
    assert code == 1
    assert "every request failed (3 of 3)" in err.getvalue()
    assert "SchemaViolation" in err.getvalue() and "/age" in err.getvalue()


# -- SIGTERM: a real process, a server that never answers -----------------------------------


def _silent_server() -> tuple[socket.socket, threading.Event]:
    """A server that accepts connections and never answers; the event is set at the first."""
    server = socket.create_server(("127.0.0.1", 0))
    connected = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            connected.set()

    threading.Thread(target=accept, daemon=True).start()
    return server, connected


@pytest.mark.parametrize("mode", ["single", "batch"])
def test_sigterm_ends_with_a_summary_line_and_exit_143(tmp_path: Path, mode: str) -> None:
    server, connected = _silent_server()
    port = server.getsockname()[1]
    argv = [sys.executable, "-m", "sdk", "-s", PERSON, "--json", "--base-url"]
    argv += [f"http://127.0.0.1:{port}/v1", "--model", "m", "--api-key", "k"]
    if mode == "batch":
        source = tmp_path / "in.jsonl"
        source.write_text(json.dumps({"id": "a", "prompt": "Ada"}) + "\n")
        argv += ["--input", str(source), "--output", str(tmp_path / "out.jsonl")]
    else:
        argv.append("Ada")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert connected.wait(60), "the command never connected"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == 143, err.decode()
    last = json.loads(out.decode().splitlines()[-1])
    if mode == "batch":
        assert last["event"] == "batch" and last["stopped"] == "terminated (SIGTERM)"
    else:
        assert last["event"] == "error" and last["exit_code"] == 143
    assert b"Traceback" not in err


def test_stdin_input_with_a_line_that_is_not_utf8(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    stdin = io.TextIOWrapper(
        io.BytesIO(b'{"id": 1, "prompt": "Ann"}\n{"id": 2, "prompt": "\xff"}\n')
    )
    code = run(
        ["-s", PERSON, "--input", "-", "--output", str(target), "--retries", "0"],
        make_backend=lambda args, report: Backend(),
        stdin=stdin,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert code == 1
    written = [json.loads(line) for line in target.read_text().splitlines()]
    got = [(w["id"], w.get("line"), "result" in w) for w in written]
    assert sorted(got, key=repr) == sorted([(None, 2, False), (1, None, True)], key=repr)


_FULL_MIDWAY = """
import io, resource, signal, sys
sys.path[:0] = sys.argv[1:3]
from tests.sdk.cli.test_batch import PERSON, Backend
from sdk._cli._main import run
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, a write fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (700, 700))
err = io.StringIO()
code = run(["-s", PERSON, "--input", sys.argv[3], "--output", sys.argv[4], "--retries", "0",
            "--concurrency", "1"], make_backend=lambda a, r: Backend(), stdout=io.StringIO(),
           stderr=err)
sys.stderr.write(err.getvalue())
sys.exit(code)
"""


def test_a_disk_that_fills_midway_stops_the_batch_and_a_rerun_resumes(tmp_path: Path) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    ids = [f"id{i}" for i in range(12)]
    source.write_text("".join(json.dumps({"id": i, "prompt": i}) + "\n" for i in ids))
    done = subprocess.run(
        [
            *(sys.executable, "-c", _FULL_MIDWAY, str(ROOT), str(ROOT / "tests" / "sdk")),
            *(str(source), str(target)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot write to" in done.stderr and "Traceback" not in done.stderr
    assert 0 < target.stat().st_size <= 700  # some lines written, the last perhaps cut short
    code, written, _, backend = batch(tmp_path, [source.read_text().rstrip("\n")])
    assert code == 0
    assert sorted(w["id"] for w in written) == sorted(ids)  # one line each, nothing lost or doubled
    assert len(backend.prompts) < len(ids)  # what was written before was not run again
