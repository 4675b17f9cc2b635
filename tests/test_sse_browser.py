"""Frames from ``sdk.format_sse`` read by a real ``EventSource`` in headless Chromium.

The values are generated JSON documents (tests/_json_texts.py: lone surrogates, numbers too
big or too small for a double, control characters, ``\\r``, ``data:`` inside strings) read by
fieldstream's parser, as a stream sees the model's output. A page served by this test opens an
``EventSource`` on a response that writes one ``field`` frame per value, ``JSON.parse``-es each
``data``, and reports what it got; that must be each value as a JavaScript engine holds it
(every frame arrives, none fails to parse, nothing ends the stream early).

Needs Debian's ``chromium`` and ``chromium-driver`` (see tests/test_web_example.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import partial
from sdk import FieldEvent, StreamEnded, Usage, format_sse
from tests._json_texts import DOCUMENTS, canonical
from tests._web_support import chromium, served

pytestmark = pytest.mark.slow  # a browser and a web server

# The page reports each value as a tree JSON.stringify keeps exactly: a number as String(n)
# (with -0 kept), so "Infinity" and "1e+30" come back as the engine holds them; strings as they
# are (JSON.stringify escapes a lone surrogate).
PAGE = """<!doctype html>
<meta charset="utf-8">
<script>
window.got = []; window.done = false; window.lost = false;
const tag = (v) =>
  typeof v === "number" ? ["number", Object.is(v, -0) ? "-0" : String(v)] :
  Array.isArray(v) ? ["list", v.map(tag)] :
  v !== null && typeof v === "object" ? ["object", Object.entries(v).map(([k, x]) => [k, tag(x)])] :
  v;
const source = new EventSource("/frames");
source.addEventListener("field", (e) => {
  try { window.got.push(JSON.stringify({ value: tag(JSON.parse(e.data).value) })); }
  catch (err) { window.got.push(JSON.stringify({ error: String(err), data: e.data })); }
});
source.addEventListener("end", () => { window.done = true; source.close(); });
source.addEventListener("error", () => {
  if (!window.done) { window.lost = true; window.done = true; source.close(); }
});
</script>
"""


def untag(tagged: Any) -> Any:
    """What the page reported, in :func:`canonical`'s form."""
    if isinstance(tagged, list) and tagged[0] == "number":
        return ("number", repr(float(tagged[1])))
    if isinstance(tagged, list) and tagged[0] == "list":
        return [untag(t) for t in tagged[1]]
    if isinstance(tagged, list) and tagged[0] == "object":
        return {canonical(k): untag(t) for k, t in tagged[1]}
    return canonical(tagged)


class Frames:
    """The probe's app: the page, and ``/frames``, which writes the frames set last."""

    def __init__(self) -> None:
        self.frames: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import HTMLResponse, StreamingResponse

        if scope["type"] != "http":
            return
        if scope["path"] == "/frames":
            frames = list(self.frames)

            async def body() -> AsyncIterator[str]:
                for frame in frames:
                    yield frame  # encoded as UTF-8 by Starlette, strictly

            response: Any = StreamingResponse(body(), media_type="text/event-stream")
        else:
            response = HTMLResponse(PAGE)
        await response(scope, receive, send)


@pytest.fixture(scope="module")
def probe() -> Iterator[tuple[Any, str, Frames]]:
    app = Frames()
    driver = chromium()
    try:
        with served(app) as url:
            yield driver, url, app
    finally:
        driver.quit()


def value_of(doc: str) -> Any:
    parser = partial.Parser()
    parser.feed(doc)
    return parser.close()


HARD = [
    '"\\ud83d"',
    '"a\\udc00b"',
    '["\\ud83d\\ude00", "\\ude00\\ud83d"]',
    "1e400",
    "-1e400",
    "1e-400",
    "-0.0",
    "5e-324",
    "9" * 400,
    '"line\\r\\nbreak\\rcr\\nlf"',
    '"data: {\\"x\\": 1}\\n\\nevent: failed\\ndata: oops"',
    '"\\u0000\\u001f\\u2028\\ufeff"',
    '{"\\ud800": [1e999, "Infinity", "NaN"]}',
]


@settings(max_examples=25, deadline=None)
@example(HARD)
@given(st.lists(DOCUMENTS, min_size=1, max_size=15))
def test_eventsource_reads_every_frame_as_the_value(
    probe: tuple[Any, str, Frames], docs: list[str]
) -> None:
    driver, url, app = probe
    values = [value_of(doc) for doc in docs]
    frames = [format_sse(FieldEvent(("v", i), v, offset=0)) for i, v in enumerate(values)]
    app.frames = [*frames, format_sse(StreamEnded(1, Usage()))]
    driver.get(url + "/")
    deadline = time.monotonic() + 30
    while not driver.execute_script("return window.done"):
        assert time.monotonic() < deadline, "the page never got the end of the stream"
        time.sleep(0.02)
    assert not driver.execute_script("return window.lost"), "the stream broke"
    got = [json.loads(g) for g in driver.execute_script("return window.got")]
    assert [g.get("error") for g in got] == [None] * len(values), got
    assert [untag(g["value"]) for g in got] == [canonical(v) for v in values]
