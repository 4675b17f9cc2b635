"""The web example (examples/web/) in a real browser: headless Chromium, driven by selenium.

The app runs for real (Starlette under uvicorn, the real client, stream, tracker, retries and
``sdk.sse_events``); the page runs for real in Chromium. Three backends: a scripted one that
writes a violating answer first (a ``mood`` no enum allows) and a valid one next, each chunk
a little apart, so that the violation, the retry and the fields arriving one at a time are
certain; an upstream that refuses the API key and says it back (the page must show the status
and the request id, never the key or the internal URL); and the packaged local model, through
the example's own command line.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/bootstrap`` installs them on a fresh
machine when run as root). Each test saves a screenshot in its temporary folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sdk import Client
from tests._web_support import (
    APP,
    BAD,
    FIELDS,
    GOOD,
    REPEATED,
    REQUEST_ID,
    ROOT,
    SECRET,
    PacedBackend,
    RewindingBackend,
    chromium,
    echoing_client,
    import_app,
    listening_socket,
    pieces,
    served,
)

pytestmark = pytest.mark.slow  # a browser, a web server (and, for one, the real model)


@pytest.fixture
def browser() -> Iterator[Any]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def scripted_app() -> Iterator[tuple[str, PacedBackend]]:
    """The example app over a :class:`PacedBackend`, served by uvicorn in a thread."""
    backend = PacedBackend(BAD, GOOD, pace=0.06)
    with served(import_app().create_app(Client.from_backend(backend))) as url:
        yield url, backend


def _watch(driver: Any, timeout: float) -> list[int]:
    """Poll the page until the stream is over; the number of filled rows seen at each poll
    while no result had arrived."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while not driver.execute_script("return window.done"):
        assert time.monotonic() < deadline, "the page never finished"
        filled, result_at = driver.execute_script(
            "return [document.querySelectorAll('#form .row.filled').length, window.resultAt]"
        )
        if result_at is None:
            seen.append(filled)
        time.sleep(0.02)
    return seen


def _form(driver: Any) -> dict[str, Any]:
    """What the form shows, read back from the page as a person would."""
    shown: dict[str, Any] = driver.execute_script(
        """
        const out = {};
        for (const row of document.querySelectorAll('#form .row')) {
          const key = row.dataset.pointer.slice(1);
          const list = row.querySelector('ul');
          out[key] = list ? Array.from(list.children, (li) => li.textContent)
                          : row.querySelector('.value').textContent;
        }
        return out;
        """
    )
    shown["age"] = int(shown["age"])
    return shown


def _assert_fields_arrived_in_order(log: list[dict[str, Any]], result_at: float) -> None:
    pointers = [e["pointer"] for e in log]
    tops = [p.split("/")[1] for p in pointers if p.count("/") == 1]
    assert tops == FIELDS, pointers  # each top-level field once, in document order
    assert pointers[-1] == "", "the root (the whole document) comes last"
    assert len(set(pointers)) == len(pointers), "a field event was repeated"
    times = [e["t"] for e in log]
    assert times == sorted(times)
    assert times[-1] <= result_at, "a field arrived after the result"


def test_the_page_fills_field_by_field_shows_the_violation_and_the_result(
    browser: Any, scripted_app: tuple[str, PacedBackend], tmp_path: Path
) -> None:
    url, backend = scripted_app
    browser.get(url + "/?autostart=1")
    seen = _watch(browser, timeout=60)
    time.sleep(0.5)  # the page's colours fade in over 0.4 s
    browser.save_screenshot(str(tmp_path / "web-example.png"))
    assert (tmp_path / "web-example.png").stat().st_size > 10_000

    # Fields appeared one at a time while the stream ran: the page was seen with 1, 2, 3 ...
    # rows filled and no result yet.
    assert {1, 2, 3, 4} <= set(seen), seen
    log = browser.execute_script("return window.fieldLog")
    result_at = browser.execute_script("return window.resultAt")
    assert result_at is not None, browser.find_element("id", "status").text
    _assert_fields_arrived_in_order(log, result_at)
    # name, age, occupation came from attempt 1 and were not sent again by attempt 2 (the
    # same values): exactly once across retries; the rest from attempt 2.
    assert [(e["pointer"], e["attempt"]) for e in log[:4]] == [
        ("/name", 1),
        ("/age", 1),
        ("/occupation", 1),
        ("/mood", 2),
    ]

    # The violation was shown, and the generation was stopped at its first character.
    [violation] = browser.execute_script("return window.violations")
    assert violation["retrying"] is True
    assert violation["error"]["type"] == "SchemaViolation"
    assert violation["error"]["pointer"] == "/mood"
    assert violation["error"]["keyword"] == "enum"
    shown = browser.find_element("css selector", "#violations li").text
    assert "SchemaViolation at /mood" in shown
    assert len(backend.sent) == 2 and backend.sent[0] < len(pieces(BAD))

    # The final form equals the validated result, which equals pydantic's reading of the
    # answer that was written.
    person = import_app().Person.model_validate_json(GOOD).model_dump(mode="json")
    result = json.loads(browser.find_element("id", "result").text)
    assert result == person
    assert _form(browser) == person
    assert "Valid" in browser.find_element("id", "status").text


def test_the_page_strikes_a_value_repaired_in_place(browser: Any, tmp_path: Path) -> None:
    # The local engine's repair (Retry(backtrack=True)): the second hobby repeats the first,
    # the generation is rewound to it, and the model writes another in the same request.
    backend = RewindingBackend(pace=0.03)
    with served(import_app().create_app(Client.from_backend(backend))) as url:
        browser.get(url + "/?autostart=1")
        _watch(browser, timeout=60)
        time.sleep(0.5)
        browser.save_screenshot(str(tmp_path / "web-example-repair.png"))
    assert backend.requests == 1 and backend.generation.rewinds == [REPEATED.rindex('"chess"')]
    [violation] = browser.execute_script("return window.violations")
    assert violation["error"]["keyword"] == "uniqueItems"
    assert violation["backtracked"] == {
        "pointer": "/hobbies",
        "text": '"chess"',
        "offset": REPEATED.rindex('"chess"'),
    }
    shown = browser.find_element("css selector", "#violations li")
    assert shown.find_element("css selector", "s").text == '"chess"'  # struck through
    assert shown.text.startswith('Attempt 1: "chess" at /hobbies rejected: ')
    assert shown.text.endswith("(rewound to where it began; rewriting it in place)")
    # What came before stayed, sent once; the repair is attempt 2's.
    log = browser.execute_script("return window.fieldLog")
    assert [(e["pointer"], e["value"], e["attempt"]) for e in log[:6]] == [
        ("/name", "Ada Lovelace", 1),
        ("/age", 36, 1),
        ("/occupation", "mathematician", 1),
        ("/mood", "curious", 1),
        ("/hobbies/0", "chess", 1),
        ("/hobbies/1", "poetry", 2),
    ]
    person = import_app().Person.model_validate_json(GOOD).model_dump(mode="json")
    assert json.loads(browser.find_element("id", "result").text) == person
    assert _form(browser) == person


@pytest.fixture
def local_app() -> Iterator[str]:
    """``python examples/web/app.py`` on the packaged local model, as the README says."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    sock.close()  # the app binds it again at once; nothing else on this machine races for it
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    log = tempfile.TemporaryFile("w+")  # the app's output, for the message when it fails
    proc = subprocess.Popen(
        [sys.executable, str(APP), "--port", str(port), "--max-tokens", "160"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=path),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )

    def output() -> str:
        log.seek(0)
        return log.read()[-4000:]

    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, output()
            assert time.monotonic() < deadline, "the app did not start"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.local
def test_the_page_fills_from_the_local_model(browser: Any, local_app: str, tmp_path: Path) -> None:
    browser.get(local_app + "/?autostart=1")
    seen = _watch(browser, timeout=600)
    time.sleep(0.5)  # the page's colours fade in over 0.4 s
    browser.save_screenshot(str(tmp_path / "web-example-local.png"))
    result_at = browser.execute_script("return window.resultAt")
    assert result_at is not None, browser.find_element("id", "status").text
    log = browser.execute_script("return window.fieldLog")
    # A retry may send a field again with a new value: judge the order of first arrivals.
    firsts = [e for i, e in enumerate(log) if e["pointer"] not in [f["pointer"] for f in log[:i]]]
    _assert_fields_arrived_in_order(firsts, result_at)
    assert len({n for n in seen if 0 < n < len(FIELDS)}) >= 2, seen  # one at a time
    result = json.loads(browser.find_element("id", "result").text)
    import_app().Person.model_validate(result)
    assert _form(browser) == result


def test_an_upstream_error_shows_its_status_and_request_id_not_its_body(
    browser: Any, tmp_path: Path
) -> None:
    # The upstream refuses the key and says it back in its body: the page tells the visitor
    # what kind of failure it was, the status and the request id; the key and the internal URL
    # stay on the server.
    with served(import_app().create_app(echoing_client())) as url:
        browser.get(url + "/?autostart=1")
        _watch(browser, timeout=60)
        browser.save_screenshot(str(tmp_path / "web-example-401.png"))
        shown = browser.find_element("id", "status").text
        page = browser.page_source
    assert shown == (
        "Failed: AuthenticationError: the model server refused the request (HTTP 401)"
        f" (request id {REQUEST_ID})"
    )
    [violation] = browser.execute_script("return window.violations")
    assert violation["error"]["request_id"] == REQUEST_ID
    assert SECRET not in page and "models.internal" not in page and "Incorrect" not in page
