"""The public API as a user's type checker sees it: mypy --strict on tests/typing.

``tests/typing/typed_streams.py`` states, with ``assert_type``, what a stream's result is for
each kind of schema, and marks with ``type: ignore[...]`` the calls that must be refused (an
unused ignore is an error under ``--strict``, so a refusal that stops happening fails too).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_stream_types_as_a_user_sees_them() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "tests/typing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
