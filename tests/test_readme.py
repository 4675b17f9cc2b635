"""Every ```python snippet in README.md runs as written, and prints what the README says.

The snippets that use ``Client.local()`` load the real packaged model on the CPU (slow); the
others need nothing. A snippet that only builds clients (servers, CUDA) is run too: building a
client must not touch the network or the device.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _title(code: str) -> str:
    for line in code.splitlines():
        if line.startswith(("class ", "async def ", "schema =", "p = ", "client = ")):
            return line.split("(")[0].split(":")[0].replace(" ", "_")[:30]
    return "block"


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec", dont_inherit=True), {"__name__": "__readme__"})
    return out.getvalue()


def test_the_readme_has_its_snippets() -> None:
    assert len(BLOCKS) >= 7


FAST = [b for b in BLOCKS if "Client.local()" not in b or "client = Client.local()" in b]
MODEL = [b for b in BLOCKS if b not in FAST]


@pytest.mark.parametrize("code", FAST, ids=[_title(b) for b in FAST])
def test_fast_snippet_runs(code: str) -> None:
    printed = _run(code)
    if "partial.Parser()" in code:
        assert "ValueDone(path=('n',), offset=" in printed
        assert printed.rstrip().endswith("{'title': 'Streaming', 'tags': ['a', 'b'], 'n': 123}")
        assert "snapshot: {'title': 'Stre'}" in printed
    if "schema=Choice([" in code:
        assert printed.splitlines() == [
            "TextDelta 'neg'",
            "TextDelta 'ativ'",
            "TextDelta 'e'",
            "FieldEvent 'negative'",
            "result: negative",
        ]
    if "stream.partial" in code:  # the typed view grows, an open string as it arrives
        lines = printed.splitlines()
        assert lines[0] == "Ada None" and "Ada Lon" in lines and "Ada London" in lines
        assert lines[-1] == "name='Ada' address=Address(city='London', street='Main')"
    if "FieldTracker(schema)" in code:
        assert "/n 7" in printed and "{'n': 7}" in printed
        assert "SchemaViolation /n:" in printed and "maximum" in printed


@pytest.mark.slow
@pytest.mark.local
@pytest.mark.parametrize("code", MODEL, ids=[_title(b) for b in MODEL])
def test_model_snippet_runs(code: str) -> None:
    printed = _run(code)
    assert printed.strip(), "the snippet printed nothing"
