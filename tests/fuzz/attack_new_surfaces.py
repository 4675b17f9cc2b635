"""Attack on the surfaces of issue 20: differential fuzzing and hostile streams and files.

Three generators, each seeded (case ``n`` of a run is ``random.Random(seed * 1_000_003 + n)``,
so any disagreement can be replayed alone), each with its oracle:

- ``chat``: Chat Completions tool-call streams of 1-3 calls of three tools, in the shapes servers
  send: with or without ``index`` (Gemini), the id on the call's first entry, a later one, or
  never (only with an index), the name on the first or the second entry, arguments cut at
  random, two calls' entries in one chunk, whitespace content, role, finish and usage chunks;
  serialized as server-sent events and cut into random byte pieces. Read by the client's
  sans-I/O path (``EventStreamParser`` -> ``ToolIdDecoder`` -> ``AttemptState``). Oracle: the
  calls the stream was made from (name, id, arguments value), and, for streams with ``index``
  (the shape it supports), openai-python's own accumulator (``ChatCompletionStreamState``). One
  case in four breaks one call's schema: the error must name that call (index, tool, id).
- ``responses``: Responses API event streams of 1-3 function calls, with ``item_id`` and/or
  ``output_index``, ``output_item.added`` repeated at random points (empty arguments, or the
  arguments so far), ``.done`` events, arguments cut at random. Oracle: the calls made from.
- ``batch``: files of 4-14 lines for ``fieldstream --input/--output`` mixing good requests
  (string and integer ids), repeated ids, lines that are not JSON, not UTF-8, blank, without a
  prompt, with a boolean or empty id; 2-4 runs with a backend that fails a random third of the
  prompts (a schema violation), the output file cut at a random byte between runs (a crash).
  Oracle: after each run the output holds exactly one line per id (its latest outcome, ids as
  they came) and one error line per bad input line; the exit status is 0 exactly when nothing
  failed.

Run: ``python tests/fuzz/attack_new_surfaces.py --cases 3000 --seed 1`` (``--only chat`` for
one). It prints, per generator, the cases tried and the disagreements (the first few in full).
``tests/sdk/http/test_tool_call_attack.py`` runs the same generators on fewer cases.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import random
import string
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "sdk")]

from sdk import Delta, StreamError, Tool  # noqa: E402
from sdk._http._framing import EventStreamParser  # noqa: E402
from sdk._http.openai._chat_decoder import ToolIdDecoder  # noqa: E402
from sdk._http.openai._responses_decoder import ResponsesDecoder  # noqa: E402
from sdk._stream._attempt import AttemptState  # noqa: E402
from sdk._trackers._target import compile_target  # noqa: E402

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
    "search": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "tags": {"type": "array"}},
        "required": ["query"],
    },
    "stock": {"type": "object", "properties": {"ticker": {"type": "string"}}},
}
TOOLS = [Tool(name, schema) for name, schema in TOOL_SCHEMAS.items()]
TARGET = compile_target(None, TOOLS)
COUNTS: Counter[str] = Counter()  # cases checked against openai-python, broken calls...
ALPHABET = string.ascii_letters + ' "\\/\n\té€😀{}[],:'


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))


def _args(rng: random.Random, name: str, broken: bool) -> dict[str, Any]:
    if name == "weather":
        value: dict[str, Any] = {"city": _text(rng)}
        if rng.random() < 0.5:
            value["days"] = rng.randint(-5, 10**6)
        if broken:
            value["city"] = rng.choice([7, None, ["x"]])
    elif name == "search":
        value = {"query": _text(rng)}
        if rng.random() < 0.5:
            value["tags"] = [_text(rng) for _ in range(rng.randint(0, 3))]
        if broken:
            value["query"] = rng.choice([1.5, True, {"a": 1}])
    else:
        value = {"ticker": _text(rng)} if rng.random() < 0.8 else {}
        if broken:
            value["ticker"] = 0
    return value


def _cut(rng: random.Random, text: str, at_least: int = 1) -> list[str]:
    """``text`` in random pieces (at least ``at_least``; empty pieces allowed past the first)."""
    n = max(at_least, rng.randint(1, 5))
    cuts = sorted(rng.randint(0, len(text)) for _ in range(n - 1))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _pieces(rng: random.Random, data: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        step = rng.choice([1, 2, 3, 7, 64, 500, len(data)])
        out.append(data[i : i + step])
        i += step
    return out


def _calls(rng: random.Random) -> tuple[list[tuple[str, Any, dict[str, Any]]], int | None]:
    calls = []
    broken_at = rng.randrange(3) if rng.random() < 0.25 else None
    for k in range(rng.randint(1, 3)):
        name = rng.choice(list(TOOL_SCHEMAS))
        calls.append((name, f"call_{rng.getrandbits(40):x}", _args(rng, name, k == broken_at)))
    if broken_at is not None and broken_at >= len(calls):
        broken_at = None
    return calls, broken_at


# ---------------------------------------------------------------------------------- chat


def chat_case(rng: random.Random) -> str | None:
    calls, broken = _calls(rng)
    with_index = rng.random() < 0.5
    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    if rng.random() < 0.3:
        chunks.append({"choices": [{"index": 0, "delta": {"content": "\n"}}]})
    entries: list[list[dict[str, Any]]] = []
    for k, (name, call_id, value) in enumerate(calls):
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        id_at = rng.choice([0, 0, 1, None] if with_index else [0, 0, 1])
        # Without an index, a call's first entry must say it is a new call (its id or name):
        # an entry with neither continues the call before, by the rule servers follow.
        # Two calls of one tool in a row, without index, are told apart by the id alone.
        if not with_index and k and calls[k - 1][0] == name:
            id_at = 0
        name_at = rng.choice([0, 0, 1]) if with_index or id_at == 0 else 0
        if id_at is None:
            calls[k] = (name, None, value)  # type: ignore[call-overload]
        pieces = _cut(rng, text, at_least=2 if 1 in (id_at, name_at) else 1)
        for j, piece in enumerate(pieces):
            entry: dict[str, Any] = {"type": "function", "function": {"arguments": piece}}
            if with_index:
                entry["index"] = k
            if j == id_at:
                entry["id"] = call_id
            if j == name_at:
                entry["function"]["name"] = name
            entries.append([entry])
    if with_index and len(entries) > 1 and rng.random() < 0.3:  # two entries in one chunk
        at = rng.randrange(len(entries) - 1)
        entries[at : at + 2] = [entries[at] + entries[at + 1]]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": e}}]} for e in entries]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    if rng.random() < 0.5:
        chunks.append(
            {
                "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12},
            }
        )
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    body += b"data: [DONE]\n\n"

    parser, decoder = EventStreamParser(), ToolIdDecoder()
    state = AttemptState(1, TARGET)
    events: list[Any] = []
    error: StreamError | None = None
    try:
        for piece in _pieces(rng, body):
            for event in parser.feed_data(piece):
                data = event if isinstance(event, str) else event.data
                for delta in decoder.feed_event("", data):
                    events.extend(state.feed(delta))
        events.extend(state.feed(Delta()))
        events.extend(state.finish())
        values = state.close()
    except StreamError as exc:
        error = exc
    if broken is not None:
        COUNTS["chat: a call broke its schema"] += 1
        name, call_id, _ = calls[broken]
        if error is None:
            return f"call {broken} broke its schema; no error"
        got = (error.tool_call, error.tool_name, error.tool_call_id)
        if got != (broken, name, call_id):
            return f"error names {got}, the broken call is {(broken, name, call_id)}: {error}"
        return None
    if error is not None:
        return f"unexpected {type(error).__name__}: {error}"
    want = [(name, call_id, value) for name, call_id, value in calls]
    record = state.record(None).tool_calls
    got_calls = [(c.name, c.id, v) for c, v in zip(record, values, strict=False)]
    if got_calls != want or len(record) != len(want):
        return f"calls {got_calls} != {want}"
    roots = [(e.tool_call, e.tool_name, e.tool_call_id) for e in events if e.path == ()]
    if roots != [(k, n, i) for k, (n, i, _) in enumerate(calls)]:
        return f"root events {roots}"
    if with_index:
        return _openai_agrees(chunks, want)
    return None


def _openai_agrees(chunks: list[dict[str, Any]], want: list[tuple[str, str, Any]]) -> str | None:
    """openai-python's accumulator on the same chunks (it needs ``index``): the same calls?"""
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    COUNTS["chat: also read by openai-python"] += 1
    state = ChatCompletionStreamState()
    for n, c in enumerate(chunks):
        full = {"id": "x", "object": "chat.completion.chunk", "created": n, "model": "m", **c}
        state.handle_chunk(ChatCompletionChunk.model_validate(full))
    message = state.get_final_completion().choices[0].message
    theirs = [
        (c.function.name, c.id, json.loads(c.function.arguments)) for c in message.tool_calls or []
    ]
    ours = want
    if theirs != ours:
        return f"openai-python reads {theirs}, the stream was made of {ours}"
    return None


# ---------------------------------------------------------------------------------- responses


def responses_case(rng: random.Random) -> str | None:
    calls, broken = _calls(rng)
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {}}]
    for k, (name, call_id, value) in enumerate(calls):
        item_id = f"fc_{k}_{rng.getrandbits(20):x}"
        item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
        added = {"type": "response.output_item.added", "output_index": k}
        events.append(added | {"item": item | {"arguments": ""}})
        text = json.dumps(value)
        sent = ""
        keys = rng.choice([("item_id",), ("output_index",), ("item_id", "output_index")])
        for piece in _cut(rng, text):
            event: dict[str, Any] = {"type": "response.function_call_arguments.delta"}
            event |= {key: item_id if key == "item_id" else k for key in keys}
            events.append(event | {"delta": piece})
            sent += piece
            if rng.random() < 0.3:  # the same item said again
                repeated = rng.choice(["", sent])
                events.append(added | {"item": item | {"arguments": repeated}})
        events.append(
            {"type": "response.function_call_arguments.done", "item_id": item_id, "arguments": text}
        )
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": k,
                "item": item | {"arguments": text},
            }
        )
    events.append({"type": "response.completed", "response": {"usage": {"input_tokens": 1}}})
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    parser, decoder = EventStreamParser(), ResponsesDecoder(tools=True)
    state = AttemptState(1, TARGET)
    error: StreamError | None = None
    values: list[Any] = []
    try:
        for piece in _pieces(rng, body):
            for sse in parser.feed_data(piece):
                kind, data = ("", sse) if isinstance(sse, str) else (sse.event, sse.data)
                for delta in decoder.feed_event(kind, data):
                    state.feed(delta)
        state.finish()
        values = state.close()
    except StreamError as exc:
        error = exc
    if broken is not None:
        COUNTS["responses: a call broke its schema"] += 1
        name, call_id, _ = calls[broken]
        if error is None:
            return f"call {broken} broke its schema; no error"
        got = (error.tool_call, error.tool_name, error.tool_call_id)
        return None if got == (broken, name, call_id) else f"error names {got}: {error}"
    if error is not None:
        return f"unexpected {type(error).__name__}: {error}"
    record = state.record(None).tool_calls
    got_calls = [(c.name, c.id, v) for c, v in zip(record, values, strict=False)]
    want = [(n, i, v) for n, i, v in calls]
    if got_calls != want or len(record) != len(want):
        return f"calls {got_calls} != {want}"
    return None


# ---------------------------------------------------------------------------------- batch


def batch_case(rng: random.Random) -> str | None:
    from sdk._cli._main import run
    from tests.sdk.cli.test_batch import PERSON, Backend

    lines: list[bytes] = []
    bad: set[int] = set()
    good: dict[Any, str] = {}  # id -> prompt (first line with that id)
    used: list[Any] = []
    for number in range(1, rng.randint(4, 14) + 1):
        kind = rng.choices(
            ["good", "repeat", "json", "utf8", "blank", "noprompt", "badid"],
            weights=[8, 1, 1, 1, 1, 1, 1],
        )[0]
        if kind == "repeat" and not used:
            kind = "good"
        if kind == "good":
            rid: Any = rng.choice([f"r{number}", number * 10, f"é{number}"])
            prompt = f"P{number}"
            lines.append(json.dumps({"id": rid, "prompt": prompt}).encode())
            good[rid] = prompt
            used.append(rid)
        elif kind == "repeat":
            lines.append(json.dumps({"id": rng.choice(used), "prompt": "again"}).encode())
            bad.add(number)
        elif kind == "json":
            lines.append(b'{"id": "j", "prompt": ')
            bad.add(number)
        elif kind == "utf8":
            lines.append(b'{"id": "u%d", "prompt": "caf\xe9"}' % number)
            bad.add(number)
        elif kind == "blank":
            lines.append(b"   ")
        elif kind == "noprompt":
            lines.append(json.dumps({"id": f"n{number}"}).encode())
            bad.add(number)
        else:
            lines.append(json.dumps({"id": rng.choice([True, "", None]), "prompt": "x"}).encode())
            bad.add(number)
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        source.write_bytes(b"\n".join(lines) + b"\n")
        for run_number in range(rng.randint(2, 4)):
            COUNTS["batch: runs"] += 1
            failing = {p for p in good.values() if rng.random() < 0.33}
            kept = set()  # ids whose result survived the runs (and crashes) before: skipped
            if target.exists():
                for raw in target.read_bytes().split(b"\n")[:-1]:
                    try:
                        record = json.loads(raw)
                    except ValueError:
                        continue
                    if "result" in record:
                        kept.add(json.dumps(record["id"]))
            failing_ids = {rid for rid, p in good.items() if p in failing}
            failing_ids -= {rid for rid in good if json.dumps(rid) in kept}

            class Flaky(Backend):
                fails = failing

                async def generate(self, request: Any) -> Any:
                    if request.messages[-1]["content"] in self.fails:
                        request.messages[-1]["content"] = "old"  # age 130: a violation
                    async for delta in super().generate(request):
                        yield delta

            code = run(
                [
                    *("-s", PERSON, "--input", str(source), "--output", str(target)),
                    *("--retries", "0", "--concurrency", str(rng.randint(1, 4))),
                ],
                make_backend=lambda args, report: Flaky(),
                stdout=io.StringIO(),
                stderr=io.StringIO(),
            )
            written = [json.loads(x) for x in target.read_text().splitlines() if x.strip()]
            per_id = Counter(json.dumps(w["id"]) for w in written if "line" not in w)
            if sorted(per_id.elements()) != sorted(json.dumps(i) for i in good):
                return f"run {run_number}: lines per id {dict(per_id)}, ids {list(good)}"
            per_line = Counter(w["line"] for w in written if "line" in w)
            if per_line != dict.fromkeys(bad, 1):
                return f"run {run_number}: error lines {dict(per_line)}, bad lines {sorted(bad)}"
            for w in written:
                if "line" in w:
                    continue
                rid = w["id"]
                if ("result" in w) == (rid in failing_ids):
                    return f"run {run_number}: {rid!r} is not its latest outcome: {w}"
                if "result" in w and w["result"]["name"] != good[rid]:
                    return f"run {run_number}: {rid!r} has another's result: {w}"
            failed = bool(bad) or bool(failing_ids)
            if code != (1 if failed else 0):
                return f"run {run_number}: exit {code}, failures: {failed}"
            if rng.random() < 0.5:  # a crash: the file cut at a random byte
                data = target.read_bytes()
                target.write_bytes(data[: rng.randint(0, len(data))])
    return None


# ---------------------------------------------------------------------------------- hostile


def _entry(**call: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


def _stock(args: Any = "{}", **call: Any) -> dict[str, Any]:
    return _entry(**call, function={"name": "stock", "arguments": args})


HOSTILE: dict[str, tuple[list[dict[str, Any]], str]] = {
    # name: (chunks, what must come of them: "ok <n>" calls, or the error's class name)
    "index is a boolean": ([_stock(index=True, id="a")], "ok 1"),
    "index is negative": ([_stock(index=-1, id="a")], "ok 1"),
    "index is a string": ([_stock(index="0", id="a")], "ok 1"),
    "index is 10**12": ([_stock(index=10**12, id="a")], "ok 1"),
    "id is a number": ([_stock(index=0, id=5)], "ok 1"),
    "name is a number": (
        [_entry(index=0, id="a", function={"name": 5, "arguments": "{}"})],
        "SchemaViolation",
    ),
    "name is empty": (
        [_entry(index=0, id="a", function={"name": "", "arguments": "{}"})],
        "SchemaViolation",
    ),
    "arguments are an object": ([_stock({"ticker": "X"}, index=0, id="a")], "ok 1"),
    "function is null": ([_entry(index=0, id="a", function=None)], "SchemaViolation"),
    "function is a list": ([_entry(index=0, id="a", function=[1])], "SchemaViolation"),
    "tool_calls is an object": (
        [{"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]}],
        "SchemaViolation",
    ),
    "an entry is a string": (
        [{"choices": [{"index": 0, "delta": {"tool_calls": ["x"]}}]}],
        "SchemaViolation",
    ),
    "one id on two indexes": ([_stock(index=0, id="a"), _stock(index=1, id="a")], "ok 2"),
    "the id changes mid call": (
        [_stock("{", index=0, id="a"), _entry(index=0, id="b", function={"arguments": "}"})],
        "ok 1",
    ),
    "no index, id or name, ever": ([_entry(function={"arguments": "{}"})], "SchemaViolation"),
    "a call repeats its id without index": (
        [_stock("{", id="a"), _entry(id="a", function={"arguments": "}"})],
        "ok 1",
    ),
    "arguments after the finish reason": (
        [
            _stock(index=0, id="a"),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            _entry(index=0, function={"arguments": "xx"}),
            {"choices": [{"index": 0, "delta": {"content": "more"}}]},
        ],
        "ok 1",
    ),
    "1000 calls": ([_stock(index=i, id=f"c{i}") for i in range(1000)], "ok 1000"),
    "1000 calls without index": ([_stock(id=f"c{i}") for i in range(1000)], "ok 1000"),
}


def hostile_case(name: str) -> str | None:
    chunks, want = HOSTILE[name]
    decoder, state = ToolIdDecoder(), AttemptState(1, TARGET)
    try:
        for c in chunks:
            for delta in decoder.feed_chunk(c):
                state.feed(delta)
        for delta in decoder.end():
            state.feed(delta)
        state.finish()
        got = f"ok {len(state.close())}"
    except StreamError as exc:
        got = type(exc).__name__
    return None if got == want else f"{name}: {got}, not {want}"


GENERATORS = {"chat": chat_case, "responses": responses_case, "batch": batch_case}


def attack(name: str, cases: int, seed: int) -> tuple[int, list[tuple[int, str]]]:
    """Run ``cases`` cases of generator ``name``; the disagreements as (case, what)."""
    found = []
    for n in range(cases):
        rng = random.Random(seed * 1_000_003 + n)
        try:
            problem = GENERATORS[name](rng)
        except Exception as exc:  # any other exception is a disagreement too
            problem = f"crashed: {type(exc).__name__}: {exc}"
        if problem is not None:
            found.append((n, problem))
    return cases, found


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--cases", type=int, default=1000)
    cli.add_argument("--batch-cases", type=int, default=None, help="default: cases // 10")
    cli.add_argument("--seed", type=int, default=1)
    cli.add_argument("--only", choices=[*GENERATORS, "hostile"])
    args = cli.parse_args()
    if args.only in (None, "hostile"):
        found = [p for p in map(hostile_case, HOSTILE) if p is not None]
        print(f"hostile: {len(HOSTILE)} hand-made chat streams, {len(found)} disagreements")
        for problem in found:
            print(f"  {problem}")
    for name in GENERATORS:
        if args.only not in (None, name):
            continue
        cases = args.cases if name != "batch" else (args.batch_cases or max(args.cases // 10, 1))
        started = time.perf_counter()
        tried, found = attack(name, cases, args.seed)
        seconds = time.perf_counter() - started
        print(f"{name}: {tried} cases, {len(found)} disagreements ({seconds:.1f} s)")
        for n, problem in found[:5]:
            print(f"  case {n}: {problem[:400]}")
    for what, n in sorted(COUNTS.items()):
        print(f"{what}: {n}")


if __name__ == "__main__":
    main()
