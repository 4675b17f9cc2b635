"""The attack of ``tests/fuzz/attack_sse.py`` on fewer cases, as a regression test: generated
documents (surrogates, huge and tiny numbers, control characters, ``data:`` in strings) through
``sse_events``, every frame strict UTF-8 and strict JSON holding ``json.loads``'s value; and
failing upstreams whose errors say the API key back, none of it reaching the page. (The browser
half runs in tests/test_sse_browser.py.)"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))

from tests.fuzz.attack_sse import check_frames, document, error_case, frames_of


def rng(n: int) -> random.Random:
    return random.Random(7 * 1_000_003 + n)


def test_generated_documents_give_frames_a_browser_reads() -> None:
    found = []
    for n in range(300):
        doc = document(rng(n))
        problem = check_frames(doc, anyio.run(frames_of, doc, rng(n)))
        if problem is not None:
            found.append((n, doc, problem))
    assert found == []


def test_failing_upstreams_keep_their_details_off_the_page() -> None:
    assert [(n, p) for n in range(60) if (p := anyio.run(error_case, rng(n))) is not None] == []
