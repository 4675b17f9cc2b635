"""The ``fieldstream`` command: arguments, schema loading, JSON Lines, the live view, exit codes.

Most tests run the command in this process through :func:`sdk._cli._main.run` with a fake backend
(scripted outputs, the requests it got recorded); the ``slow`` ones run ``python -m sdk`` for
real against the local engine and against a port where no server listens.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from sdk._backend import Delta, GenerationRequest, Message, Rewound, Usage
from sdk._cli._backends import request_options
from sdk._cli._exit import exit_code_for
from sdk._cli._main import build_parser, run
from sdk._cli._schema_source import SchemaSourceError, load_schema
from sdk._client import Client
from sdk._errors import (
    BackendError,
    MissingDependencyError,
    RefusedError,
    RetriesExhausted,
    SchemaError,
    SchemaViolation,
    StreamUsageError,
    TransportError,
    TruncatedError,
)
from sdk._schema import compile_schema
from sdk._schema_prompt import DEFAULT_SYSTEM, system_text, with_schema
from sdk._version import version

ROOT = Path(__file__).resolve().parents[3]
PERSON_PY = str(ROOT / "examples" / "models.py") + ":Person"
PERSON_JSON = str(ROOT / "examples" / "schemas" / "person.json")
GOOD = '{"name":"Ada","age":36,"occupation":"engineer","mood":"calm","hobbies":["chess"]}'
OLD = '{"name":"Ada","age":130,"occupation":"engineer","mood":"calm","hobbies":[]}'


# -- a scripted backend ----------------------------------------------------------------------


class FakeBackend:
    """Plays one script per generation: text pieces, then a finish delta (or an exception)."""

    def __init__(self, *scripts: Sequence[str | Delta | BaseException]) -> None:
        self.scripts = list(scripts)
        self.requests: list[GenerationRequest] = []
        self.closed_generations = 0

    async def generate(self, request: GenerationRequest) -> AsyncIterator[Delta]:
        self.requests.append(request)
        script = self.scripts.pop(0)
        try:
            for item in script:
                await anyio.lowlevel.checkpoint()
                if isinstance(item, BaseException):
                    raise item
                yield item if isinstance(item, Delta) else Delta(item)
        finally:
            self.closed_generations += 1

    async def aclose(self) -> None:
        pass


def pieces(doc: str, size: int = 7, finish: str = "stop") -> list[str | Delta]:
    out: list[str | Delta] = [doc[i : i + size] for i in range(0, len(doc), size)]
    out.append(Delta(finish_reason=finish, usage=Usage(20, len(out), 3)))
    return out


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines()]


class Stdin(io.StringIO):
    def __init__(self, text: str = "", tty: bool = False) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def cli(*argv: str, backend: FakeBackend | None = None, stdin: str | None = None) -> Result:
    out, err = io.StringIO(), io.StringIO()
    make: Callable[[Any, Any], Any] | None = None
    if backend is not None:
        make = lambda args, report: backend  # noqa: E731
    code = run(
        list(argv),
        make_backend=make,
        stdin=Stdin(stdin or "", tty=stdin is None),
        stdout=out,
        stderr=err,
    )
    return Result(code, out.getvalue(), err.getvalue())


# -- --version and --help ----------------------------------------------------------------------


def test_version_is_the_one_in_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert version() == project["version"]
    result = cli("--version")
    assert result.code == 0
    assert result.out.strip() == f"fieldstream {project['version']}"


def test_help_documents_the_exit_codes() -> None:
    result = cli("--help")
    assert result.code == 0
    for line in (
        "0    success",
        "1    the output failed",
        "2    usage error",
        "3    backend unavailable",
    ):
        assert line in result.out


# -- usage errors: exit 2 ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["hi"], "required: -s/--schema"),
        (["-s", PERSON_JSON, "--max-tokens", "0", "hi"], "--max-tokens"),
        (["-s", PERSON_JSON, "--retries", "-1", "hi"], "--retries"),
        (["-s", PERSON_JSON, "--temperature", "x", "hi"], "--temperature"),
        (["-s", PERSON_JSON, "--top-p", "1.5", "hi"], "--top-p"),
        (["-s", PERSON_JSON, "--local", "--base-url", "http://h/v1", "hi"], "not allowed with"),
        (["-s", PERSON_JSON, "--json", "--live", "hi"], "not allowed with"),
        (["-s", PERSON_JSON, "--bogus", "hi"], "unrecognized arguments"),
        (["-s", PERSON_JSON, "-p", "a", "b"], "give the prompt once"),
        (["-s", PERSON_JSON, "   "], "the prompt is empty"),
        (["-s", PERSON_JSON], "no prompt"),
        (["-s", PERSON_JSON, "--api-key", "k", "hi"], "--api-key is for a server"),
        (["-s", PERSON_JSON, "--mode", "tool", "hi"], "--mode is for a server"),
        (["-s", PERSON_JSON, "--provider", "anthropic", "--local", "hi"], "does not go with"),
        (["-s", PERSON_JSON, "--provider", "cohere", "hi"], "invalid choice"),
        (["-s", PERSON_JSON, "--provider", "ollama", "--device", "cpu", "hi"], "--device"),
        (["-s", PERSON_JSON, "--base-url", "http://h/v1", "--device", "cpu", "hi"], "--device"),
        (
            ["-s", PERSON_JSON, "--base-url", "http://h/v1", "--no-jump-forward", "hi"],
            "--no-jump-forward",
        ),
        (["-s", PERSON_JSON, "--base-url", "http://h/v1", "--runtime", "torch", "hi"], "--runtime"),
        (["-s", PERSON_JSON, "--runtime", "onnx", "hi"], "invalid choice"),
        (["-s", PERSON_JSON, "--backtrack", "--retries", "0", "hi"], "needs --retries 1"),
        (
            ["-s", PERSON_JSON, "--base-url", "http://h/v1", "--backtrack", "hi"],
            "--backtrack is for the local engine",
        ),
    ],
)
def test_bad_arguments_exit_2(argv: list[str], message: str) -> None:
    backend = FakeBackend()
    result = cli(*argv, backend=backend)
    assert result.code == 2
    assert message in result.err
    # What argparse refuses is its message alone; every later usage error is said as any
    # error is: one error event as the last JSON line, and the message on stderr.
    if result.out:
        [line] = result.lines
        assert line["event"] == "error" and line["exit_code"] == 2
        assert message in line["error"]["message"]
    assert backend.requests == []


def test_missing_schema_file_exits_2_with_an_error_line(tmp_path: Path) -> None:
    result = cli("-s", str(tmp_path / "nope.json"), "hi", backend=FakeBackend())
    assert result.code == 2
    [line] = result.lines
    assert line["event"] == "error"
    assert line["exit_code"] == 2
    assert line["error"]["type"] == "SchemaSourceError"
    assert "schema file not found" in line["error"]["message"]
    assert "schema file not found" in result.err


def test_unusable_schema_exits_2() -> None:
    result = cli("-s", '{"type": "nonsense"}', "hi", backend=FakeBackend())
    assert result.code == 2
    assert result.lines[-1]["error"]["type"] == "SchemaError"


# -- schema sources ----------------------------------------------------------------------------


def test_load_schema_from_a_json_file() -> None:
    schema = load_schema(PERSON_JSON)
    assert schema["title"] == "Person"
    assert schema["properties"]["mood"]["enum"] == ["happy", "calm", "curious", "grumpy"]


def test_load_schema_inline() -> None:
    assert load_schema(' {"type": "integer"} ') == {"type": "integer"}


def test_load_schema_from_a_python_file() -> None:
    model = load_schema(PERSON_PY)
    assert model.__name__ == "Person"
    assert set(model.model_fields) == {"name", "age", "occupation", "mood", "hobbies"}
    assert load_schema(PERSON_PY) is model  # the file is imported once


def test_load_schema_from_an_importable_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fs_cli_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shapes.py").write_text(
        "from pydantic import BaseModel\n"
        "class Outer:\n"
        "    class Point(BaseModel):\n"
        "        x: int\n"
        "        y: int\n"
        "SCHEMA = {'type': 'object', 'required': ['k']}\n"
    )
    monkeypatch.chdir(tmp_path)  # the current directory is importable, as for python -m
    monkeypatch.delitem(sys.modules, "fs_cli_pkg", raising=False)
    monkeypatch.delitem(sys.modules, "fs_cli_pkg.shapes", raising=False)
    point = load_schema("fs_cli_pkg.shapes:Outer.Point")
    assert point.__name__ == "Point"
    assert load_schema("fs_cli_pkg.shapes:SCHEMA") == {"type": "object", "required": ["k"]}
    assert str(tmp_path) not in sys.path  # put back as it was


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "the schema is empty"),
        ("missing.json", "schema file not found"),
        ("examples/models.py", "name the model in it"),
        (str(ROOT / "examples" / "models.py") + ":Nobody", "has no attribute 'Nobody'"),
        ("no_such_module_fs:Model", "no module named 'no_such_module_fs'"),
        ("missing_dir/models.py:Person", "schema module file not found"),
        ("json:decoder", "is a module"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "schema file not found"),
    ],
)
def test_load_schema_errors(spec: str, message: str) -> None:
    with pytest.raises(SchemaSourceError, match=message):
        load_schema(spec)


def test_load_schema_json_errors_say_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "type": "object"\n  "required": []\n}')  # a comma missing
    with pytest.raises(
        SchemaSourceError, match=r"bad\.json' is not valid JSON: .*line 3, column 3"
    ):
        load_schema(str(bad))
    # A trailing comma: Python 3.13 places it at the comma, 3.11 at the brace after it; the
    # message names the file and the position the standard library found, either way.
    trailing = tmp_path / "trailing.json"
    trailing.write_text('{\n  "type": "object",\n}')
    with pytest.raises(json.JSONDecodeError) as where:
        json.loads(trailing.read_text())
    at = f"line {where.value.lineno}, column {where.value.colno}"
    with pytest.raises(SchemaSourceError, match=rf"trailing\.json' is not valid JSON: .*{at}"):
        load_schema(str(trailing))
    array = tmp_path / "array.json"
    array.write_text("[1]")
    with pytest.raises(SchemaSourceError, match="must hold a JSON object"):
        load_schema(str(array))


def test_load_schema_file_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken_models.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(SchemaSourceError, match="boom"):
        load_schema(f"{broken}:Model")


# -- JSON Lines (no terminal) -----------------------------------------------------------------


def test_json_lines_of_a_successful_run() -> None:
    backend = FakeBackend(pieces(GOOD))
    result = cli("-s", PERSON_PY, "Describe someone", backend=backend)
    assert result.code == 0, result.err
    lines = result.lines
    fields = [line for line in lines if line["event"] == "field"]
    assert [f["pointer"] for f in fields] == [
        "/name",
        "/age",
        "/occupation",
        "/mood",
        "/hobbies/0",
        "/hobbies",
        "",
    ]
    assert fields[4] == {
        "event": "field",
        "path": ["hobbies", 0],
        "pointer": "/hobbies/0",
        "value": "chess",
        "attempt": 1,
        "t": fields[4]["t"],
    }
    assert all(isinstance(f["t"], float) and f["t"] >= 0 for f in fields)
    assert [f["t"] for f in fields] == sorted(f["t"] for f in fields)
    assert fields[-1]["value"] == json.loads(GOOD)
    result_line = lines[-1]
    assert result_line["event"] == "result"
    assert result_line["value"] == json.loads(GOOD)
    assert result_line["attempts"] == 1
    assert result_line["usage"] == {
        "prompt_tokens": 20,
        "completion_tokens": len(pieces(GOOD)) - 1,
        "forced_tokens": 3,
    }
    assert result_line["tokens"] == len(pieces(GOOD)) - 1
    assert len(lines) == len(fields) + 1


class GrammarOnly(FakeBackend):
    """A scripted backend whose server does not show the schema to the model (as the local
    engine's, Ollama's, vLLM's)."""

    def shows_schema(self, request: GenerationRequest) -> bool:
        return False


def test_the_request_carries_the_prompt_schema_and_options() -> None:
    backend = GrammarOnly(pieces(GOOD))
    result = cli(
        "-s",
        PERSON_JSON,
        "--max-tokens",
        "64",
        "--temperature",
        "0.5",
        "--top-p",
        "0.9",
        "--seed",
        "7",
        "--prompt",
        "Describe someone",
        backend=backend,
    )
    assert result.code == 0, result.err
    [request] = backend.requests
    assert request.max_tokens == 64
    assert (request.temperature, request.top_p, request.seed) == (0.5, 0.9, 7)
    assert request.mode == "json_schema"
    assert request.schema["properties"]["age"] == {"type": "integer", "minimum": 0, "maximum": 120}
    system, user = request.messages
    assert system["role"] == "system" and '"maxItems":3' in system["content"]
    assert user == {"role": "user", "content": "Describe someone"}


def _person_schema() -> Any:
    return compile_schema(load_schema(PERSON_JSON)).json_schema


def test_the_command_shows_the_schema_as_the_api_does() -> None:
    """One text: what the command sends is what ``Client.stream`` sends for the same
    conversation (the command's messages, shown by the client: sdk._schema_prompt)."""
    schema = _person_schema()
    backend = GrammarOnly(pieces(GOOD))
    assert cli("-s", PERSON_JSON, "Describe someone", backend=backend).code == 0
    [request] = backend.requests
    user = {"role": "user", "content": "Describe someone"}
    assert request.messages == with_schema([user], schema)
    assert request.messages[0] == {"role": "system", "content": system_text(schema)}
    assert request.messages[0]["content"].startswith(DEFAULT_SYSTEM + " Reply with one JSON")

    async def through_the_api() -> tuple[Message, ...]:
        api = GrammarOnly(pieces(GOOD))
        async with Client.from_backend(api) as client:
            async with client.stream(messages=[user], schema=load_schema(PERSON_JSON)) as s:
                await s.result()
        return api.requests[0].messages

    assert anyio.run(through_the_api) == request.messages


def test_system_is_kept_and_the_schema_follows_it() -> None:
    backend = GrammarOnly(pieces(GOOD))
    result = cli("-s", PERSON_JSON, "--system", "Be brief.", "Describe someone", backend=backend)
    assert result.code == 0, result.err
    system, user = backend.requests[0].messages
    assert system == {"role": "system", "content": system_text(_person_schema(), "Be brief.")}
    assert system["content"].startswith("Be brief.\n\nReply with one JSON document")
    assert user == {"role": "user", "content": "Describe someone"}


@pytest.mark.parametrize(
    ("flag", "shown"), [("--show-schema", True), ("--no-show-schema", False), (None, False)]
)
def test_show_schema_flags(flag: str | None, shown: bool) -> None:
    # A backend that does not say what its server shows is left as it is, unless forced.
    backend = FakeBackend(pieces(GOOD))
    argv = ["-s", PERSON_JSON, "Describe someone"] + ([flag] if flag else [])
    assert cli(*argv, backend=backend).code == 0
    messages = backend.requests[0].messages
    assert [m["role"] for m in messages] == (["system", "user"] if shown else ["user"])
    forced_off = GrammarOnly(pieces(GOOD))
    assert cli("-s", PERSON_JSON, "--no-show-schema", "hi", backend=forced_off).code == 0
    assert forced_off.requests[0].messages == ({"role": "user", "content": "hi"},)


def test_prompt_from_stdin_and_an_empty_system_message() -> None:
    backend = FakeBackend(pieces(GOOD))
    result = cli("-s", PERSON_JSON, "--system", "", backend=backend, stdin="From stdin\n")
    assert result.code == 0, result.err
    assert backend.requests[0].messages == ({"role": "user", "content": "From stdin\n"},)


def test_a_violation_is_retried_and_reported() -> None:
    backend = FakeBackend(pieces(OLD, size=3), pieces(GOOD))
    result = cli("-s", PERSON_PY, "hi", backend=backend)
    assert result.code == 0, result.err
    events = [line["event"] for line in result.lines]
    failed = [line for line in result.lines if line["event"] == "attempt_failed"]
    assert len(failed) == 1
    assert failed[0]["attempt"] == 1 and failed[0]["retrying"] is True
    error = failed[0]["error"]
    assert (error["type"], error["pointer"], error["keyword"], error["value"]) == (
        "SchemaViolation",
        "/age",
        "maximum",
        130,
    )
    # The first attempt was aborted at the violation: its generation was closed early.
    assert backend.closed_generations == 2
    assert events.index("attempt_failed") < events.index("result")
    # /name came first in attempt 1 and is not repeated for attempt 2 (same value).
    names = [line for line in result.lines if line.get("pointer") == "/name"]
    assert [n["attempt"] for n in names] == [1]
    assert result.lines[-1]["attempts"] == 2
    feedback = backend.requests[1].messages[2:]
    assert feedback and "/age" in feedback[-1]["content"]


def test_retries_exhausted_exits_1() -> None:
    backend = FakeBackend(pieces(OLD), pieces(OLD))
    result = cli("-s", PERSON_PY, "--retries", "1", "hi", backend=backend)
    assert result.code == 1
    lines = result.lines
    assert [line["retrying"] for line in lines if line["event"] == "attempt_failed"] == [
        True,
        False,
    ]
    last = lines[-1]
    assert last["event"] == "error" and last["exit_code"] == 1
    assert last["error"]["type"] == "RetriesExhausted"
    assert [a["type"] for a in last["error"]["attempts"]] == ["SchemaViolation"] * 2
    assert "fieldstream: error:" in result.err


def test_truncation_exits_1_with_what_arrived() -> None:
    backend = FakeBackend(pieces(GOOD[:38], finish="length"))
    result = cli("-s", PERSON_PY, "--retries", "0", "hi", backend=backend)
    assert result.code == 1
    error = result.lines[-1]["error"]
    assert error["type"] == "TruncatedError"
    assert error["reason"] == "length"
    assert error["snapshot"] == {"name": "Ada", "age": 36, "occupation": "e"}
    assert error["open_paths"][-1] == "/occupation"


def test_transport_failure_exits_3() -> None:
    down = TransportError("connection refused", status=None, retryable=True)
    backend = FakeBackend([down], [down])
    result = cli("-s", PERSON_PY, "--retries", "1", "hi", backend=backend)
    assert result.code == 3
    # Transport retries that run out raise the transport error itself.
    assert result.lines[-1]["error"]["type"] == "TransportError"
    assert backend.scripts == []


def test_backend_that_cannot_be_made_exits_3() -> None:
    def make(args: Any, report: Any) -> Any:
        raise MissingDependencyError("pip install 'fieldstream[local]'")

    out, err = io.StringIO(), io.StringIO()
    code = run(["-s", PERSON_PY, "hi"], make_backend=make, stdout=out, stderr=err)
    assert code == 3
    assert json.loads(out.getvalue())["error"]["type"] == "MissingDependencyError"


# -- --backtrack: a value repaired in place ----------------------------------------------------

# The demo's case: the second hobby repeats the first; rewound, the model writes another.
REPEATED = '{"name":"Ada","age":36,"occupation":"engineer","mood":"calm","hobbies":["chess",'
REPEAT = '"chess","go"]}'
REPAIR = '"go"]}'


class RewindingGeneration:
    """Plays ``first`` three characters a delta; a rewind plays ``redo`` from the offset asked
    for. Rewindable, as the local engine's generations are."""

    def __init__(self, first: str, redo: str) -> None:
        self.text, self.redo = first, redo
        self.todo = [first[i : i + 3] for i in range(0, len(first), 3)]
        self.rewinds: list[int] = []
        self.finished = False

    def __aiter__(self) -> RewindingGeneration:
        return self

    async def __anext__(self) -> Delta:
        await anyio.lowlevel.checkpoint()
        if self.finished:
            raise StopAsyncIteration
        if not self.todo:
            self.finished = True
            return Delta(finish_reason="stop", usage=Usage(20, 30))
        return Delta(self.todo.pop(0), tokens=1)

    async def rewind(self, offset: int, *, ban: bool = True) -> Rewound:
        self.rewinds.append(offset)
        self.todo, self.finished = [self.redo], False
        return Rewound(offset, offset, 2, '"chess"')

    async def aclose(self) -> None:
        pass


class RewindingBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.generation = RewindingGeneration(REPEATED + REPEAT, REPAIR)

    def generate(self, request: GenerationRequest) -> Any:
        self.requests.append(request)
        return self.generation


def test_backtrack_repairs_in_place_and_says_so_in_json_lines() -> None:
    backend = RewindingBackend()
    result = cli("-s", PERSON_PY, "--backtrack", "hi", backend=backend)
    assert result.code == 0, result.err
    assert len(backend.requests) == 1  # rewound, never asked again
    assert backend.generation.rewinds == [len(REPEATED)]
    events = [line["event"] for line in result.lines]
    i = events.index("backtracked")
    assert events[i - 1] == "attempt_failed"
    back = result.lines[i]
    assert (back["attempt"], back["pointer"], back["path"], back["text"], back["offset"]) == (
        1,
        "/hobbies",
        ["hobbies"],
        '"chess"',
        len(REPEATED),
    )
    assert back["error"]["keyword"] == "uniqueItems" and back["error"]["value"] == "chess"
    fields = [
        (f["pointer"], f["value"], f["attempt"]) for f in result.lines if f["event"] == "field"
    ]
    assert ("/hobbies/1", "chess", 1) not in fields  # the rejected value never went out
    assert ("/hobbies/1", "go", 2) in fields
    assert ("/hobbies", ["chess", "go"], 2) in fields
    assert result.lines[-1]["value"]["hobbies"] == ["chess", "go"]
    assert result.lines[-1]["attempts"] == 2


def test_backtrack_is_off_unless_asked_for() -> None:
    def retry_of(*argv: str) -> Any:
        return request_options(build_parser().parse_args(["-s", PERSON_PY, *argv, "hi"]))["retry"]

    assert retry_of().backtrack is False
    assert retry_of("--backtrack").backtrack is True
    assert retry_of("--backtrack", "--retries", "5").max_attempts == 6


# -- the live view -----------------------------------------------------------------------------


def plain(text: str) -> str:
    """Terminal output without escape sequences, its whitespace runs made single spaces."""
    return " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).split())


def test_live_view_shows_fields_retries_and_the_result() -> None:
    backend = FakeBackend(pieces(OLD, size=3), pieces(GOOD))
    result = cli("-s", PERSON_PY, "--live", "hi", backend=backend)
    assert result.code == 0, result.err
    final = plain(result.out[result.out.rindex("╭") :])  # the last frame
    for text in (
        '"occupation"',
        "✓",
        "/hobbies/0",
        "attempt 1",
        "SchemaViolation",
        "retrying (attempt 2 of 3)",
        "done",
        "2 attempts",
        "tok/s",
    ):
        assert text in final, text
    assert "130" in final  # the failed attempt's value, in its message


def test_live_view_strikes_the_rejected_value_and_marks_the_repair() -> None:
    backend = RewindingBackend()
    result = cli("-s", PERSON_PY, "--backtrack", "--live", "hi", backend=backend)
    assert result.code == 0, result.err
    final = result.out[result.out.rindex("╭") :]  # the last frame
    text = plain(final)
    for shown in (
        '↺ /hobbies "chess" uniqueItems: expected unique items',
        "rewound, rewriting in place (attempt 2 of 3)",
        '✓ /hobbies/1 "go" repaired',
        "2 attempts",
    ):
        assert shown in text, shown
    # The failure is told once, by the repair's row, not also as a plain retry.
    assert "retrying (attempt 2 of 3)" not in text
    assert text.count('"go" repaired') == 1 and '/hobbies/0 "chess" repaired' not in text
    # While the repair streams, the frame says so (until a tick brings the kept output).
    assert "rewound: rewriting /hobbies…" in plain(result.out[: result.out.rindex("╭")])
    # Struck through (SGR 9), in red.
    assert re.search(r'\x1b\[[0-9;]*\b9\b[0-9;]*m"chess"', final), final


def test_live_view_reports_failure() -> None:
    backend = FakeBackend(pieces(GOOD[:38], finish="length"))
    result = cli("-s", PERSON_PY, "--live", "--retries", "0", "hi", backend=backend)
    assert result.code == 1
    out = plain(result.out)
    assert "✗ failed" in out and "TruncatedError" in out
    assert "exit 1" in out


def test_live_view_of_an_error_before_the_stream(tmp_path: Path) -> None:
    result = cli("-s", str(tmp_path / "none.json"), "--live", "hi", backend=FakeBackend())
    assert result.code == 2
    assert "schema file not found" in plain(result.out)


# -- exit codes and token counts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (SchemaViolation("x"), 1),
        (TruncatedError("x"), 1),
        (RefusedError("no"), 1),
        (RetriesExhausted([SchemaViolation("x"), TruncatedError("y")]), 1),
        (RetriesExhausted([SchemaViolation("x"), TransportError("down")]), 3),
        (TransportError("down", status=503), 3),
        (BackendError("model"), 3),
        (MissingDependencyError("torch"), 3),
        (SchemaError("bad"), 2),
        (StreamUsageError("twice"), 2),
        (KeyboardInterrupt(), 130),
    ],
)
def test_exit_code_for(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_an_aborted_attempt_counts_in_the_tokens_and_the_rate() -> None:
    # Attempt 1 is aborted at "130" (the backend never reports its usage): its text deltas
    # are counted, one token each; attempt 2 reports its own usage.
    backend = FakeBackend(pieces(OLD, size=3), pieces(GOOD))
    result = cli("-s", PERSON_PY, "--json", "hi", backend=backend)
    assert result.code == 0, result.err
    [failed] = [line for line in result.lines if line["event"] == "attempt_failed"]
    assert failed["retrying"] is True
    final = result.lines[-1]
    # The violation is certain at the comma after 130: the pieces up to the one holding it.
    aborted_deltas = (OLD.index("130,") + 3) // 3 + 1
    assert final["usage"]["completion_tokens"] == aborted_deltas + len(pieces(GOOD)) - 1
    assert final["tokens_per_s"] is not None and final["tokens_per_s"] > 0
    assert backend.closed_generations == 2


def test_parser_defaults() -> None:
    args = build_parser().parse_args(["-s", "x.json", "p"])
    assert (args.retries, args.max_tokens, args.base_url, args.mode) == (
        2,
        None,
        None,
        "json_schema",
    )


# -- real runs ---------------------------------------------------------------------------------


def _python_m_sdk(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "sdk", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_python_m_sdk_version() -> None:
    done = _python_m_sdk("--version", timeout=120)
    assert done.returncode == 0
    assert done.stdout.strip() == f"fieldstream {version()}"


@pytest.mark.slow
def test_unreachable_server_exits_3() -> None:
    done = _python_m_sdk(
        "-s",
        PERSON_JSON,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--retries",
        "0",
        "hi",
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    line = json.loads(done.stdout.splitlines()[-1])
    assert line["event"] == "error" and line["error"]["type"] == "APIConnectionError"


@pytest.mark.slow
@pytest.mark.local
def test_local_engine_json_lines_for_real() -> None:
    schema = json.dumps(
        {
            "type": "object",
            "properties": {"mood": {"enum": ["happy", "sad"]}},
            "required": ["mood"],
            "additionalProperties": False,
        }
    )
    done = _python_m_sdk("-s", schema, "--max-tokens", "16", "How do you feel today?")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["event"] for line in lines] == ["field", "field", "result"]
    assert lines[0]["pointer"] == "/mood" and lines[0]["value"] in ("happy", "sad")
    assert lines[2]["value"] == {"mood": lines[0]["value"]}
    assert lines[2]["usage"]["completion_tokens"] >= 1
    assert "loaded SmolLM2-135M-Instruct" in done.stderr

    # Too few tokens for the document: truncated, exit 1, with the error line.
    done = _python_m_sdk("-s", PERSON_PY, "--max-tokens", "3", "--retries", "0", "Describe someone")
    assert done.returncode == 1, done.stderr
    last = json.loads(done.stdout.splitlines()[-1])
    assert last["event"] == "error" and last["error"]["type"] == "TruncatedError"
    assert last["error"]["reason"] == "length"


@pytest.mark.anyio
async def test_provider_names_a_native_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    from sdk._cli._backends import open_backend, request_options
    from sdk._http.anthropic import AnthropicBackend
    from sdk._http.ollama import OllamaBackend

    monkeypatch.delenv("FIELDSTREAM_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    parser = build_parser()
    args = parser.parse_args(
        [
            "-s",
            PERSON_JSON,
            "--provider",
            "anthropic",
            "--model",
            "claude-x",
            "--mode",
            "tool",
            "hi",
        ]
    )
    backend = await open_backend(args, None, None)  # type: ignore[arg-type]
    assert isinstance(backend, AnthropicBackend)
    assert backend.headers["x-api-key"] == "from-env" and backend.model == "claude-x"
    assert request_options(args)["mode"] == "tool"
    await backend.aclose()
    args = parser.parse_args(
        ["-s", PERSON_JSON, "--provider", "ollama", "--base-url", "http://box:11434", "hi"]
    )
    backend = await open_backend(args, None, None)  # type: ignore[arg-type]
    assert isinstance(backend, OllamaBackend) and backend.url == "http://box:11434/api/chat"
    await backend.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("runtime", [None, "torch", "llama.cpp"])
async def test_runtime_reaches_the_local_engine(
    monkeypatch: pytest.MonkeyPatch, runtime: str | None
) -> None:
    """``--runtime`` is handed to the local engine (and to the question whether the model
    will be converted first: llama.cpp reads the GGUF as it is)."""
    import contextlib
    import types

    from sdk._cli._backends import _local_backend

    made: list[dict[str, Any]] = []
    asked: list[dict[str, Any]] = []

    class LocalBackend:
        def __init__(self, **kwargs: Any) -> None:
            made.append(kwargs)

        def load(self) -> Any:
            loaded = types.SimpleNamespace(device="cpu", runtime=runtime or "llama.cpp")
            return types.SimpleNamespace(loaded=loaded)

    def pending_conversion(model: Any, **kwargs: Any) -> None:
        asked.append(kwargs)

    # The real package with its two entry points replaced: _runtime_ahead still imports
    # sdk._local._model (a fake module in sys.modules would hide the package's submodules).
    import sdk._local

    monkeypatch.setattr(sdk._local, "LocalBackend", LocalBackend)
    monkeypatch.setattr(sdk._local, "pending_conversion", pending_conversion)

    class Report:
        def __init__(self) -> None:
            self.said: list[str] = []

        def status(self, text: str) -> None:
            self.said.append(text)

        def busy(self, text: str) -> Any:
            return contextlib.nullcontext()

    argv = ["-s", PERSON_JSON, "hi", *(["--runtime", runtime] if runtime else [])]
    args = build_parser().parse_args(argv)
    report = Report()
    backend = await _local_backend(args, report)  # type: ignore[arg-type]
    assert isinstance(backend, LocalBackend)
    assert made == [{"model": None, "device": None, "runtime": runtime, "jump_forward": True}]
    assert asked == [{"runtime": runtime, "device": None}]
    assert f"({runtime or 'llama.cpp'})" in report.said[-1]


@pytest.mark.local
def test_the_command_turns_transformers_progress_bars_off() -> None:
    """The torch runtime's load printed transformers' "Loading weights" bars through the
    command's output; the command turns them off before it loads (a library call does not)."""
    logging = pytest.importorskip("transformers.utils.logging")
    from sdk._cli._backends import _quiet_transformers

    logging.enable_progress_bar()
    try:
        _quiet_transformers()
        assert not logging.is_progress_bar_enabled()
    finally:
        logging.enable_progress_bar()


# -- --explain: what the local engine's mask does with the schema ------------------------------


def test_explain_prints_the_mask_report_and_exits_0_without_a_prompt() -> None:
    pytest.importorskip("llguidance", reason="needs llguidance (the local extra)")
    schema = '{"type":"object","properties":{"n":{"type":"number","multipleOf":0.25}}}'
    backend = FakeBackend()
    result = cli("--explain", "-s", schema, backend=backend)  # no prompt, stdin a terminal
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "llama.cpp mask: 1 relaxed (/properties/n multipleOf); 1 object(s) closed by the "
        "strict rule, 0 left open",
        "  widened /properties/n multipleOf: a bounded number refuses spellings json.dumps "
        "writes (1e-06, 2.0): any number",
        "  strict /: closed to these names [n]",
        "  key order /: n",
        "  exact: /",
    ]
    assert backend.requests == []  # nothing generated
    as_json = cli("--explain", "--json", "-s", PERSON_JSON)
    assert as_json.code == 0
    (line,) = as_json.lines
    assert line["runtime"] == "llama.cpp"
    assert line["relaxations"] == []  # the person's schema is masked exactly
    assert line["key_order"]["/"] == ["name", "age", "occupation", "mood", "hobbies"]


def test_explain_is_for_the_local_engine() -> None:
    result = cli("--explain", "-s", PERSON_JSON, "--base-url", "http://127.0.0.1:9/v1")
    assert result.code == 2
    assert "--explain is for the local engine's mask" in result.lines[-1]["error"]["message"]
    unusable = cli("--explain", "-s", '{"type": 3}')
    assert unusable.code == 2
