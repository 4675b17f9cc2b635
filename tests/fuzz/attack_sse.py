"""Attack on the server-sent events a web page reads (issue 29, section 5 and the web example's
errors): every frame valid UTF-8 and valid JSON, read back as the value; nothing the server
said about a failure reaching the page.

Three generators, each seeded (case ``n`` is ``random.Random(seed * 1_000_003 + n)``), each
with oracles that are not the code under test:

- ``frames``: JSON documents as a model may write them (lone surrogates, escaped or raw; pairs;
  numbers of up to 400 digits and exponents up to +-999; control characters, ``\\r``, line
  breaks, ``data:``/``event:`` inside strings and keys), streamed in random pieces through
  ``stream_structured(..., schema={})`` and ``sse_events``. Every frame must encode as strict
  UTF-8, be one ``event:`` and one ``data:`` line, and parse as strict JSON (no ``NaN`` or
  ``Infinity``); each field's value and the result must equal Python's ``json.loads`` of the
  document at that place (as a JavaScript engine holds numbers: doubles).
- ``browser`` (``--browser-sets``): those frames served to headless Chromium; a page reads them
  with ``EventSource`` and ``JSON.parse``; every frame must arrive, parse, and hold the value
  ``json.loads`` read from the document (the JavaScript engine is the second oracle).
- ``errors``: an upstream that fails: HTTP 400-599 with a body that says the API key and the
  internal URL back (as JSON or text, with or without ``x-request-id``), a connection error or
  a timeout whose message holds them, an error event inside a 200 stream. Through a real
  ``Client`` and ``sse_events``: no frame may hold the key or the host; ``failed`` must carry
  the status and a request id (the upstream's when it sent one); the server's log must hold the
  details under the same id.

Run: ``python tests/fuzz/attack_sse.py --cases 3000 --browser-sets 100 --error-cases 500
--seed 1``. ``--code DIR`` imports ``sdk`` and ``partial`` from another tree (the code before
a fix, e.g. ``git archive COMMIT sdk partial | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FRAME = re.compile(r"event: [a-z_]+\ndata: [^\r\n]*\n\n")
PIECES = [
    "\ud83d",
    "\ude00",
    "\ud83d\ude00",
    "😀",
    "é",
    "\r",
    "\n",
    "\r\n",
    "\x00",
    "\x1f",
    "\x7f",
    "\u2028",
    "\ufeff",
    "data: ",
    "\n\ndata: {",
    "event: failed\n",
    ":",
    '"',
    "\\",
    "Infinity",
    "NaN",
]


def canonical(value: Any) -> Any:
    """As a JavaScript engine holds it: strings as UTF-16 code units, numbers as doubles."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, int):
        return ("number", repr(float(str(value))))
    if isinstance(value, float):
        return ("number", repr(value))
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return {canonical(k): canonical(v) for k, v in value.items()}


def strict(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# ---------------------------------------------------------------- documents


def text(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randrange(6)):
        if rng.random() < 0.5:
            out.append(rng.choice(PIECES))
        else:
            top = rng.choice([0x7F, 0xFFFF, 0x10FFFF])
            out.append("".join(chr(rng.randrange(top + 1)) for _ in range(rng.randrange(4))))
    return "".join(out)


def number(rng: random.Random) -> str:
    sign = rng.choice(["", "-"])
    digits = rng.choice([1, 3, 17, 25, 400])
    whole = str(rng.randrange(1, 10)) + "".join(rng.choice("0123456789") for _ in range(digits - 1))
    if rng.random() < 0.2:
        whole = "0"
    frac = "." + "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 20)))
    exp = rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.randrange(1000))
    if digits == 400:  # an integer of 400 digits, or a huge or tiny float
        return sign + whole + (exp if rng.random() < 0.5 else "")
    return sign + whole + (frac if rng.random() < 0.5 else "") + (exp if rng.random() < 0.6 else "")


def document(rng: random.Random, depth: int = 0) -> str:
    kind = rng.random()
    if depth < 3 and kind < 0.25:
        return "[" + ", ".join(document(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    if depth < 3 and kind < 0.5:
        keys = {text(rng) for _ in range(rng.randrange(4))}  # no repeated key
        members = [f"{json.dumps(k)}: {document(rng, depth + 1)}" for k in keys]
        return "{" + ", ".join(members) + "}"
    if kind < 0.75:
        return json.dumps(text(rng), ensure_ascii=rng.random() < 0.5)  # raw or escaped
    if kind < 0.95:
        return number(rng)
    return rng.choice(["true", "false", "null"])


def at(value: Any, path: list[Any]) -> Any:
    for step in path:
        value = value[step]
    return value


async def frames_of(doc: str, rng: random.Random) -> list[str]:
    from sdk import sse_events, stream_structured

    cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, rng.randrange(8))))
    chunks = [doc[i:j] for i, j in zip([0, *cuts], [*cuts, len(doc)], strict=True)]

    async def source() -> AsyncIterator[str]:
        for chunk in chunks:
            yield chunk

    stream = stream_structured(source(), schema={}, progress=True)
    return [frame async for frame in sse_events(stream)]


def check_frames(doc: str, frames: list[str]) -> str | None:
    """The first thing wrong with the frames of ``doc``, or None."""
    oracle = json.loads(doc)
    names = []
    for frame in frames:
        try:
            frame.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"not UTF-8: {exc}"
        if not FRAME.fullmatch(frame):
            return f"not one event and one data line: {frame[:120]!r}"
        name, data = frame[len("event: ") : -2].split("\ndata: ")
        names.append(name)
        try:
            value = json.loads(data, parse_constant=strict)
        except ValueError as exc:
            return f"{name}: not strict JSON ({exc}): {data[:120]!r}"
        if name == "field" and canonical(value["value"]) != canonical(at(oracle, value["path"])):
            return f"field {value['pointer']!r}: {value['value']!r} != the document's"
        if name == "result" and canonical(value) != canonical(oracle):
            return f"result {value!r} != the document's"
    if names[-1] != "result":
        return f"the stream ended with {names[-1]!r}"
    return None


# ---------------------------------------------------------------- the browser

PAGE = """<!doctype html><meta charset="utf-8"><script>
window.got = []; window.done = false; window.lost = false;
const tag = (v) =>
  typeof v === "number" ? ["number", Object.is(v, -0) ? "-0" : String(v)] :
  Array.isArray(v) ? ["list", v.map(tag)] :
  v !== null && typeof v === "object" ? ["object", Object.entries(v).map(([k, x]) => [k, tag(x)])] :
  v;
const source = new EventSource("/frames");
for (const name of ["field", "text", "attempt", "attempt_failed", "usage", "end", "result"])
  source.addEventListener(name, (e) => {
    try { window.got.push(JSON.stringify({ value: tag(JSON.parse(e.data)) })); }
    catch (err) { window.got.push(JSON.stringify({ error: String(err) })); }
  });
source.addEventListener("stop", () => { window.done = true; source.close(); });
source.addEventListener("error", () => {
  if (!window.done) { window.lost = true; window.done = true; source.close(); }
});
</script>"""


def untag(tagged: Any) -> Any:
    if isinstance(tagged, list) and tagged[0] == "number":
        return ("number", repr(float(tagged[1])))
    if isinstance(tagged, list) and tagged[0] == "list":
        return [untag(t) for t in tagged[1]]
    if isinstance(tagged, list) and tagged[0] == "object":
        return {canonical(k): untag(t) for k, t in tagged[1]}
    return canonical(tagged)


def browser_attack(sets: list[list[str]]) -> list[str]:
    """Serve each set of frames to Chromium; what it read that Python did not."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tests._web_support import chromium, served

    current: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import HTMLResponse, StreamingResponse

        if scope["type"] != "http":
            return
        if scope["path"] == "/frames":
            frames = [*current, "event: stop\ndata: {}\n\n"]

            async def body() -> AsyncIterator[str]:
                for frame in frames:
                    yield frame

            response: Any = StreamingResponse(body(), media_type="text/event-stream")
        else:
            response = HTMLResponse(PAGE)
        await response(scope, receive, send)

    found = []
    driver = chromium()
    try:
        with served(app) as url:
            # A response that dies (the code before the fix) is counted here, not logged.
            logging.getLogger("uvicorn.error").disabled = True
            for n, frames in enumerate(sets):
                current[:] = frames
                driver.get(url + "/")
                deadline = time.monotonic() + 60
                while not driver.execute_script("return window.done"):
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
                got = [json.loads(g) for g in driver.execute_script("return window.got")]
                lost = driver.execute_script("return window.lost")
                # Python's reading of each frame (lenient: the code before the fix wrote
                # Infinity, which JSON.parse must then be seen to refuse).
                expected = [canonical(json.loads(f.split("\ndata: ")[1][:-2])) for f in frames]
                if lost or len(got) != len(expected):
                    found.append(f"set {n}: {len(got)} of {len(expected)} frames, lost={lost}")
                    continue
                for i, (g, e) in enumerate(zip(got, expected, strict=True)):
                    if "error" in g or untag(g["value"]) != e:
                        found.append(f"set {n} frame {i}: {str(g)[:200]}")
                        break
    finally:
        driver.quit()
    return found


# ---------------------------------------------------------------- upstream errors


async def error_case(rng: random.Random) -> str | None:
    import httpx

    from sdk import Client, sse_events

    secret = "sk-" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(24))
    host = f"models-{rng.randrange(10**6)}.internal"
    base_url = f"http://{host}:{rng.randrange(1024, 65536)}/v1"
    request_id = f"req_{rng.randrange(10**9)}" if rng.random() < 0.5 else None
    headers = {"x-request-id": request_id} if request_id else {}
    kind = rng.choice(["status", "status", "text", "connect", "timeout", "in_stream"])
    status = rng.choice([400, 401, 403, 404, 409, 422, 429, 500, 502, 503, rng.randrange(400, 600)])

    def upstream(request: httpx.Request) -> httpx.Response:
        said = f"Incorrect API key {request.headers['authorization']} for {request.url}"
        if kind == "connect":
            raise httpx.ConnectError(said, request=request)
        if kind == "timeout":
            raise httpx.ReadTimeout(said, request=request)
        if kind == "text":
            return httpx.Response(status, text=said, headers=headers)
        if kind == "in_stream":
            chunk = {"choices": [{"index": 0, "delta": {"content": '{"a": '}}]}
            error = {"error": {"message": said, "type": "server_error", "code": status}}
            body = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(error)}\n\n"
            head = {"content-type": "text/event-stream", **headers}
            return httpx.Response(200, text=body, headers=head)
        error = {"error": {"message": said, "type": "invalid_request_error", "param": secret}}
        return httpx.Response(status, json=error, headers=headers)

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("fieldstream")
    logger.addHandler(handler)
    try:
        http = httpx.AsyncClient(transport=httpx.MockTransport(upstream))
        async with Client(
            base_url=base_url, api_key=secret, model="m", http_client=http, max_retries=0
        ) as client:
            stream = client.stream(
                messages=[{"role": "user", "content": "hi"}], schema={}, progress=True
            )
            frames = [frame async for frame in sse_events(stream)]
    finally:
        logger.removeHandler(handler)
    page = "".join(frames)
    decoded = json.dumps([json.loads(f.split("\ndata: ")[1]) for f in frames], ensure_ascii=False)
    for what, leak in (("the API key", secret), ("the internal host", host)):
        if leak in page or leak in decoded:
            return f"{kind} {status}: {what} reached the page: {page[-300:]!r}"
    name, data = frames[-1][len("event: ") : -2].split("\ndata: ")
    failed = json.loads(data)
    if name != "failed":
        return f"{kind}: the stream ended with {name!r}"
    if kind in ("status", "text") and failed.get("status") != status:
        return f"{kind} {status}: the page got status {failed.get('status')!r}"
    rid = failed.get("request_id")
    if not rid or (request_id and kind in ("status", "text") and rid != request_id):
        return f"{kind} {status}: the page got request id {rid!r} (upstream: {request_id!r})"
    logged = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    if not any(rid in m and secret in m for m in logged):
        return f"{kind} {status}: the log has no details under {rid!r}: {logged!r}"
    return None


# ---------------------------------------------------------------- main


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--cases", type=int, default=1000, help="documents (frames)")
    cli.add_argument("--browser-sets", type=int, default=0, help="sets of 20 documents' frames")
    cli.add_argument("--error-cases", type=int, default=200)
    cli.add_argument("--seed", type=int, default=1)
    cli.add_argument("--code", type=Path, default=ROOT, help="where sdk and partial come from")
    args = cli.parse_args()
    sys.path.insert(0, str(args.code))
    import anyio

    def rng(n: int) -> random.Random:
        return random.Random(args.seed * 1_000_003 + n)

    started = time.perf_counter()
    found: list[tuple[int, str]] = []
    all_frames: list[list[str]] = []
    for n in range(args.cases):
        doc = document(rng(n))
        frames = anyio.run(frames_of, doc, rng(n))
        problem = check_frames(doc, frames)
        if problem is not None:
            found.append((n, problem))
        all_frames.append([f for f in frames if not f.startswith("event: failed")])
    seconds = time.perf_counter() - started
    count = sum(len(f) for f in all_frames)
    print(f"frames: {args.cases} documents, {count} frames, ", end="")
    print(f"{len(found)} disagreements ({seconds:.1f} s)")
    kinds = Counter(
        "not UTF-8"
        if p.startswith("not UTF-8")
        else "not strict JSON"
        if "strict" in p
        else "other"
        for _, p in found
    )
    for kind, n in sorted(kinds.items()):
        print(f"  {kind}: {n}")
    for n, problem in found[:5]:
        print(f"  case {n}: {problem[:300]}")

    if args.browser_sets:
        started = time.perf_counter()
        groups = [all_frames[i : i + 20] for i in range(0, 20 * args.browser_sets, 20)]
        sets = [[frame for frames in group for frame in frames] for group in groups]
        sets = [s for s in sets if s]
        problems = browser_attack(sets)
        seconds = time.perf_counter() - started
        count = sum(len(s) for s in sets)
        print(
            f"browser: {len(sets)} pages, {count} frames read by EventSource + JSON.parse, "
            f"{len(problems)} disagreements ({seconds:.1f} s)"
        )
        for problem in problems[:5]:
            print(f"  {problem}")

    started = time.perf_counter()
    errors = [(n, anyio.run(error_case, rng(n))) for n in range(args.error_cases)]
    bad = [(n, p) for n, p in errors if p is not None]
    seconds = time.perf_counter() - started
    print(
        f"errors: {args.error_cases} failing upstreams, {len(bad)} disagreements ({seconds:.1f} s)"
    )
    for n, problem in bad[:5]:
        print(f"  case {n}: {problem[:300]}")


if __name__ == "__main__":
    main()
