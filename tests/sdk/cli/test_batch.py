"""``fieldstream --input ... --output ...``: a file of requests as a batch. Outcomes written as
they end, bad lines as error lines, a rerun resumes, an interruption loses nothing written."""

from __future__ import annotations

import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from sdk._backend import Delta, GenerationRequest, Usage
from sdk._cli._main import run
from sdk._cli._schema_source import load_schema
from sdk._schema import compile_schema
from sdk._schema_prompt import system_text, with_schema

ROOT = Path(__file__).resolve().parents[3]
PERSON = str(ROOT / "examples" / "models.py") + ":Person"


def person(name: str) -> str:
    doc = {"name": name, "age": 30, "occupation": "baker", "mood": "calm", "hobbies": []}
    return json.dumps(doc)


class Backend:
    """Answers a Person named after the prompt; prompt "old" writes age 130 (a violation);
    prompt "stop" raises KeyboardInterrupt (a Ctrl-C in the middle of the batch)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        prompt = request.messages[-1]["content"]
        self.prompts.append(prompt)
        if prompt == "stop":
            raise KeyboardInterrupt
        doc = (
            person(prompt).replace('"age": 30', '"age": 130') if prompt == "old" else person(prompt)
        )
        for i in range(0, len(doc), 9):
            await anyio.lowlevel.checkpoint()
            yield Delta(doc[i : i + 9])
        yield Delta(finish_reason="stop", usage=Usage(20, 11))

    async def aclose(self) -> None:
        pass


def batch(
    tmp: Path, lines: list[str], *extra: str, backend: Backend | None = None
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]], Backend]:
    source, target = tmp / "in.jsonl", tmp / "out.jsonl"
    source.write_text("".join(line + "\n" for line in lines))
    backend = backend or Backend()
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target), "--retries", "0", *extra],
        make_backend=lambda args, report: backend,
        stdout=out,
        stderr=err,
    )
    written = (
        [json.loads(line) for line in target.read_text().splitlines()] if target.exists() else []
    )
    progress = [json.loads(line) for line in out.getvalue().splitlines()]
    return code, written, progress, backend


def test_a_batch_writes_one_line_per_request(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "prompt": "Ada"}),
        json.dumps({"id": 2, "messages": [{"role": "user", "content": "Bo"}]}),
        "{not json",
        json.dumps({"id": "c"}),
        "",
        json.dumps({"id": "d", "prompt": "old"}),
    ]
    code, written, progress, backend = batch(tmp_path, lines, "--concurrency", "2")
    assert code == 1  # some failed
    by_id = {(w["id"], "result" in w): w for w in written}
    assert by_id[("a", True)]["result"]["name"] == "Ada"
    assert by_id[(2, True)]["result"]["name"] == "Bo"  # a numeric id comes back a number
    assert (
        by_id[("a", True)]["attempts"] == 1 and by_id[("a", True)]["usage"]["prompt_tokens"] == 20
    )
    bad_json = next(w for w in written if w.get("line") == 3)
    assert bad_json["id"] is None and bad_json["error"]["type"] == "BatchInputError"
    no_prompt = next(w for w in written if w.get("line") == 4)
    assert no_prompt["id"] == "c" and "prompt" in no_prompt["error"]["message"]
    violation = by_id[("d", False)]
    assert violation["error"]["type"] == "SchemaViolation"
    assert len(written) == 5
    items = [p for p in progress if p["event"] == "item"]
    assert len(items) == 5
    summary = progress[-1]
    assert summary["event"] == "batch"
    assert (summary["done"], summary["failed"], summary["skipped"]) == (5, 3, 0)
    # The system message asks for the schema; each prompt is its own user message.
    assert sorted(backend.prompts) == ["Ada", "Bo", "old"]


def test_a_rerun_skips_what_has_a_result_and_drops_a_line_cut_short(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text(
        json.dumps({"id": "a", "result": {"name": "Ada"}})
        + "\n"
        + json.dumps({"id": "b", "error": {"type": "TransportError"}})
        + "\n"
        + '{"id": "c", "res'  # a crash in the middle of a line
    )
    lines = [json.dumps({"id": x, "prompt": x.upper()}) for x in "abc"]
    code, written, progress, backend = batch(tmp_path, lines, "--concurrency", "1")
    assert code == 0
    assert backend.prompts == ["B", "C"]  # a skipped; b failed before, so it runs again
    # The cut line is gone, and so is b's old error: one line per id, its latest outcome.
    assert [(w["id"], "result" in w) for w in written] == [("a", True), ("b", True), ("c", True)]
    assert progress[-1]["skipped"] == 1


def test_an_interruption_keeps_what_was_written_and_a_rerun_finishes(tmp_path: Path) -> None:
    lines = [json.dumps({"id": str(i), "prompt": f"P{i}"}) for i in range(3)]
    lines.append(json.dumps({"id": "x", "prompt": "stop"}))
    lines += [json.dumps({"id": str(i), "prompt": f"P{i}"}) for i in range(3, 6)]
    code, written, progress, _ = batch(tmp_path, lines, "--concurrency", "1")
    assert code == 130
    assert [w["id"] for w in written] == ["0", "1", "2"]
    assert progress[-1]["stopped"] == "interrupted"
    # Run again without the line that interrupted: only the rest runs.
    rest = [line for line in lines if '"stop"' not in line]
    code, written, _, backend = batch(tmp_path, rest, "--concurrency", "1")
    assert code == 0
    assert backend.prompts == ["P3", "P4", "P5"]
    assert [w["id"] for w in written] == [str(i) for i in range(6)]


def test_input_and_output_go_together(tmp_path: Path) -> None:
    err = io.StringIO()
    code = run(
        ["-s", PERSON, "--input", str(tmp_path / "in.jsonl")], stdout=io.StringIO(), stderr=err
    )
    assert code == 2
    assert "--input and --output" in err.getvalue()


def test_the_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"id": str(i), "prompt": "Ann"}) + "\n" for i in range(4)))
    out = io.StringIO()
    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target), "--live"],
        make_backend=lambda args, report: Backend(),
        stdout=out,
        stderr=io.StringIO(),
    )
    assert code == 0
    text = out.getvalue()
    assert "batch" in text and "4/4" in text and "0 failed" in text


class Terminal(io.StringIO):
    """One terminal, which the command's stdout and stderr both write to."""

    def isatty(self) -> bool:
        return True


def screen(raw: str) -> list[str]:
    """The non-blank lines a terminal shows after ``raw``: carriage returns, newlines, erasing
    a line (``ESC[2K``) and moving up (``ESC[nA``) applied; colours and cursor visibility
    ignored (what rich writes for a live display)."""
    lines, row, col = [""], 0, 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", raw):
        if not token:
            continue
        if token == "\r":
            col = 0
        elif token == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif token.startswith("\x1b["):
            if token == "\x1b[2K":
                lines[row] = ""
            elif token.endswith("A"):
                row = max(row - int(token[2:-1] or 1), 0)
        else:
            line = lines[row].ljust(col)
            lines[row] = line[:col] + token + line[col + len(token) :]
            col += len(token)
    return [line.rstrip() for line in lines if line.strip()]


def test_status_lines_on_the_bars_terminal_go_above_it_and_the_bar_is_drawn_once(
    tmp_path: Path,
) -> None:
    """On a terminal, the model-loading lines are printed above the bar, each on its own line,
    and one bar is left at the end (they were written over the bar's line, and each left a
    copy of the bar behind: three bars)."""
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"id": str(i), "prompt": "Ann"}) + "\n" for i in range(4)))
    terminal = Terminal()

    def loading(args: Any, report: Any) -> Backend:
        report.status("loading SmolLM2-135M-Instruct (the default model)…")
        report.status("loaded SmolLM2-135M-Instruct (the default model) on cpu in 1.0 s")
        return Backend()

    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target)],
        make_backend=loading,
        stdout=terminal,
        stderr=terminal,
    )
    assert code == 0
    shown = screen(terminal.getvalue())
    assert shown[:2] == [
        "fieldstream: loading SmolLM2-135M-Instruct (the default model)…",
        "fieldstream: loaded SmolLM2-135M-Instruct (the default model) on cpu in 1.0 s",
    ]
    assert len(shown) == 3, shown  # one bar
    assert shown[2].startswith("batch") and "4/4" in shown[2] and "0 failed" in shown[2]


def test_status_lines_to_another_place_than_the_bars_terminal_go_there_as_they_are(
    tmp_path: Path,
) -> None:
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text(json.dumps({"id": "1", "prompt": "Ann"}) + "\n")
    terminal, log = Terminal(), io.StringIO()

    def loading(args: Any, report: Any) -> Backend:
        report.status("loading the model…")
        return Backend()

    code = run(
        ["-s", PERSON, "--input", str(source), "--output", str(target)],
        make_backend=loading,
        stdout=terminal,
        stderr=log,
    )
    assert code == 0
    assert log.getvalue() == "fieldstream: loading the model…\n"
    assert "loading" not in terminal.getvalue()


def test_a_rerun_with_nothing_left_starts_no_backend(tmp_path: Path) -> None:
    lines = [json.dumps({"id": x, "prompt": x.upper()}) for x in "ab"]
    code, first_run, _, _ = batch(tmp_path, lines)
    assert code == 0 and len(first_run) == 2

    def no_backend(args: Any, report: Any) -> Backend:
        raise AssertionError("a backend (the model load) was started with nothing to run")

    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "out.jsonl"
    code = run(
        ["-s", PERSON, "--input", str(tmp_path / "in.jsonl"), "--output", str(target)],
        make_backend=no_backend,
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    assert [json.loads(line) for line in target.read_text().splitlines()] == first_run
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert summary["event"] == "batch"
    assert (summary["done"], summary["failed"], summary["skipped"]) == (0, 0, 2)


def test_a_rerun_whose_only_lines_left_are_bad_reports_them_without_a_backend(
    tmp_path: Path,
) -> None:
    lines = [json.dumps({"id": "a", "prompt": "A"}), "{not json"]
    code, _, _, _ = batch(tmp_path, lines)
    assert code == 1

    def no_backend(args: Any, report: Any) -> Backend:
        raise AssertionError("a backend was started with nothing to run")

    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "out.jsonl"
    code = run(
        ["-s", PERSON, "--input", str(tmp_path / "in.jsonl"), "--output", str(target)],
        make_backend=no_backend,
        stdout=out,
        stderr=err,
    )
    assert code == 1  # the bad line again, with its error line
    written = [json.loads(line) for line in target.read_text().splitlines()]
    assert [("result" in w, w.get("line")) for w in written] == [(True, None), (False, 2)]


class Counting(Backend):
    """Counts the generations running at once (each holds on a moment before answering)."""

    def __init__(self, slots: int | None = None) -> None:
        super().__init__()
        if slots is not None:
            self.slots = slots
        self.running = self.peak = 0

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await anyio.sleep(0.2)
            async for delta in super().generate(request):
                yield delta
        finally:
            self.running -= 1


def test_without_concurrency_a_batch_runs_the_local_engine_s_slots_at_once(
    tmp_path: Path,
) -> None:
    """The default: as many requests as the backend has slots (the local engine decodes them
    together), else the command line's default for a server."""
    from sdk._constants import DEFAULT_CLI_CONCURRENCY

    lines = [json.dumps({"id": i, "prompt": f"P{i}"}) for i in range(8)]
    (tmp_path / "local").mkdir()
    (tmp_path / "server").mkdir()
    local, server = Counting(slots=3), Counting()
    code, written, _, _ = batch(tmp_path / "local", lines, backend=local)
    assert code == 0 and len(written) == 8
    assert local.peak == 3
    code, written, _, _ = batch(tmp_path / "server", lines, backend=server)
    assert code == 0 and len(written) == 8
    assert server.peak == DEFAULT_CLI_CONCURRENCY


class Recording(Backend):
    """:class:`Backend` with each request's messages kept; its server shows no schema (as the
    local engine's)."""

    def __init__(self) -> None:
        super().__init__()
        self.conversations: list[tuple[Any, ...]] = []

    def shows_schema(self, request: GenerationRequest) -> bool:
        return False

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.conversations.append(request.messages)
        async for delta in super().generate(request):
            yield delta


def test_every_request_of_a_batch_is_shown_the_schema_after_system(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "prompt": "Ada"}),
        json.dumps({"id": "b", "messages": [{"role": "user", "content": "Bo"}]}),
    ]
    backend = Recording()
    code, _, _, _ = batch(
        tmp_path, lines, "--system", "Be brief.", "--concurrency", "1", backend=backend
    )
    assert code == 0
    schema = compile_schema(load_schema(PERSON)).json_schema
    assert backend.conversations == [
        (
            {"role": "system", "content": system_text(schema, "Be brief.")},
            {"role": "user", "content": "Ada"},
        ),
        with_schema([{"role": "user", "content": "Bo"}], schema),  # its own messages: no --system
    ]
    quiet = Recording()
    (tmp_path / "q").mkdir()
    assert batch(tmp_path / "q", lines[:1], "--no-show-schema", backend=quiet)[0] == 0
    assert quiet.conversations == [({"role": "user", "content": "Ada"},)]
