"""Every ```python block of README.md and of the documentation site (docs/**/*.md) runs as
written, and prints what the page says; the API reference documents every public name.

A block is not run only when its fence says so, visibly: ```` ```python {.no-run} ```` (for a
sample that needs a server or a GPU). Such a block is still compiled, so its syntax cannot rot.
The blocks that use ``Client.local()`` load the real packaged model on the CPU (slow); the
others need nothing. A block that only builds clients (servers, CUDA) is run too: building a
client must not touch the network or the device.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import partial
import sdk

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
NO_RUN = "{.no-run}"


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    info: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return NO_RUN not in self.info


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
        for m in FENCE.finditer(text)
    ]


BLOCKS = [b for page in PAGES for b in blocks_of(page)]


def _run(block: Block) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = compile(block.code, str(block.page), "exec", dont_inherit=True)
        exec(code, {"__name__": "__docs__"})
    return out.getvalue()


def test_the_pages_have_their_samples() -> None:
    assert len([b for b in BLOCKS if b.page == README]) >= 1
    assert len([b for b in BLOCKS if b.runs]) >= 15
    for block in BLOCKS:  # an unknown fence option is a typo, not a silent skip
        assert block.info in ("", NO_RUN), f"{block.id}: fence option {block.info!r}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.runs], ids=lambda b: b.id)
def test_a_block_not_run_still_compiles(block: Block) -> None:
    compile(block.code, block.id, "exec", dont_inherit=True)


def _needs_model(code: str) -> bool:
    return "Client.local()" in code and "client = Client.local()" not in code


FAST = [b for b in BLOCKS if b.runs and not _needs_model(b.code)]
MODEL = [b for b in BLOCKS if b.runs and _needs_model(b.code)]


@pytest.mark.parametrize("block", FAST, ids=lambda b: b.id)
def test_fast_sample_runs(block: Block) -> None:
    printed = _run(block)
    code = block.code
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
    totals = {"anthropic": "112 100", "ollama": "26", "gemini": "21"}
    for provider, last in totals.items():  # docs/providers/<provider>.md, offline
        if (
            f'provider="{provider}"' in code
            and "MockTransport" in code
            and "tool_choice" not in code
        ):
            assert printed.splitlines() == [
                "('name',) Paris",
                "('population',) 2102650",
                "() {'name': 'Paris', 'population': 2102650}",
                f"name='Paris' population=2102650 {last}",
            ]
    if 'provider="ollama"' in code and "tool_choice" in code:  # a forced call, read as the call
        assert printed.splitlines() == [
            "0 City ('name',) Paris",
            "0 City ('population',) 2102650",
            "0 City () {'name': 'Paris', 'population': 2102650}",
            "[City(name='Paris', population=2102650)] tool_calls",
        ]
    if "reasoning_fallback=True" in code:  # docs/reasoning.md: the answer read from thinking
        assert printed.splitlines() == ["name='Paris'"]
    if "custom_tool_call_input" in code:  # docs/providers/openai.md: a grammar OpenAI applies
        assert printed.splitlines() == [
            "{'type': 'custom', 'name': 'choice'}",
            "{'type': 'grammar', 'syntax': 'regex', 'definition': '(?:positive|negative)'}",
            "TextDelta 'neg'",
            "TextDelta 'ative'",
            "FieldEvent 'negative'",
            "result: negative",
        ]
    if "FieldTracker(schema)" in code:
        assert "/n 7" in printed and "{'n': 7}" in printed
        assert "SchemaViolation /n:" in printed and "maximum" in printed


@pytest.mark.slow
@pytest.mark.local
@pytest.mark.parametrize("block", MODEL, ids=lambda b: b.id)
def test_model_sample_runs(block: Block) -> None:
    printed = _run(block)
    assert printed.strip(), "the sample printed nothing"


def _documented(package: str) -> list[str]:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted((DOCS / "reference").glob("*.md")))
    return re.findall(rf"^::: {package}\.(\w+)$", text, re.M)


@pytest.mark.parametrize("package", [sdk, partial], ids=lambda m: m.__name__)
def test_the_api_reference_documents_every_public_name_once(package: object) -> None:
    name = package.__name__  # type: ignore[attr-defined]
    documented = _documented(name)
    assert sorted(documented) == sorted(package.__all__), (  # type: ignore[attr-defined]
        "docs/reference must have one `::: {name}.X` line per name in __all__"
    )


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert {p for p in pages if f": {p}" not in nav} == set()


def test_the_readmes_links_lead_somewhere() -> None:
    # The README is not part of the site (mkdocs checks the site's links): check its own.
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links into docs/"
    assert [t for t in local if not (ROOT / t).exists()] == []
