"""The public API as a user's type checker sees it: mypy --strict and pyright on tests/typing.

``tests/typing/typed_streams.py`` states, with ``assert_type``, what a stream's result is for
each kind of schema, and marks with ``type: ignore[...]`` the calls that must be refused (an
unused ignore is an error under mypy ``--strict``; pyright is run on a copy without the
comments and must refuse exactly those lines).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ROOT / "tests" / "typing" / "typed_streams.py"
IGNORE = re.compile(r"  # type: ignore\[[a-z-]+\]")


def test_mypy_sees_the_stream_types() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(CHECKED)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=570,  # generous: a loaded machine (pytest-timeout stops the test at 600 s)
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_pyright_sees_the_same_and_refuses_the_same(tmp_path: Path) -> None:
    source = CHECKED.read_text()
    refused = {i for i, line in enumerate(source.splitlines(), 1) if IGNORE.search(line)}
    assert refused, "the file must mark the calls a type checker refuses"
    copy = tmp_path / "typed_streams_unmarked.py"
    copy.write_text(IGNORE.sub("", source))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyright",
            "--outputjson",
            "--pythonpath",
            sys.executable,
            str(copy),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=570,  # generous: a loaded machine (pytest-timeout stops the test at 600 s)
    )
    report = json.loads(done.stdout)
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    lines = {d["range"]["start"]["line"] + 1 for d in errors}
    assert lines == refused, json.dumps(errors, indent=1)
