"""Every pattern check runs under a time budget (issue 29, section 1).

``^(a|aa)+$`` on a string that almost matches takes exponential time in a backtracking engine:
the final check that runs out is a typed :class:`sdk.PatternTimeout` naming the path and the
pattern (not a violation: the output is not known to be wrong, and it is not retried); a
prefix check that runs out defers to the final check (never a false reject); and a hostile
stream does not stall the other streams on its event loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import pydantic
import pytest
import regex

from sdk import (
    FieldTracker,
    PatternTimeout,
    Regex,
    Retry,
    SchemaViolation,
    StreamError,
)
from sdk._constants import DEFAULT_REGEX_TIMEOUT
from sdk._options import StreamConfig, split_options
from sdk._regex._budget import (
    MAX_EXPANSION,
    Budget,
    BudgetSpent,
    could,
    enter,
    fullmatch,
    leave,
)
from sdk._regex._ecma import compile_ecma, pattern_size
from sdk._structured import stream_structured
from sdk._trackers._text import TextTracker
from tests.sdk.stream._stream_support import PERSON, Scripted, chunks

HOSTILE = ["^(?=a)(a|aa)+$", "^(?!b)(a|a)*$"]
"""Patterns with catastrophic backtracking on ``"a" * 40 + "!"`` in the ``regex`` package (it
defuses many textbook cases such as ``^(a+)+$`` on its own; ``(a|aa)+`` and ``(a|a)*`` it does
not), with a lookaround, so that RE2 cannot take them and the budget is what stands."""
ALMOST = "a" * 40 + "!"
FAST = 0.02  # a small budget keeps the tests quick; the default is checked on its own


def _string_schema(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}


def test_the_default_budget_is_the_one_the_docs_give() -> None:
    # The value is written once (sdk/_constants.py); the manual states it, so read it there.
    docs = Path(__file__).parents[3] / "docs"
    patterns = (docs / "patterns.md").read_text(encoding="utf-8")
    reliability = (docs / "reliability.md").read_text(encoding="utf-8")
    stated = re.search(r"`regex_timeout` \(seconds, default \*\*([0-9.]+)\*\*\)", patterns)
    assert stated is not None, "docs/patterns.md no longer states the regex_timeout default"
    assert float(stated.group(1)) == DEFAULT_REGEX_TIMEOUT
    assert f"`regex_timeout` seconds (default {DEFAULT_REGEX_TIMEOUT:g})" in reliability
    assert StreamConfig().regex_timeout == DEFAULT_REGEX_TIMEOUT
    assert Budget().timeout == DEFAULT_REGEX_TIMEOUT


@pytest.mark.parametrize("pattern", HOSTILE)
def test_a_final_check_that_runs_out_is_a_typed_error_with_the_path_and_pattern(
    pattern: str,
) -> None:
    tracker = FieldTracker(_string_schema(pattern), regex_timeout=FAST)
    tracker.feed('{"x": "')
    tracker.feed(ALMOST)  # the prefix check runs out here: no verdict, no error
    with pytest.raises(PatternTimeout) as info:
        tracker.feed('"}')
    err = info.value
    assert not isinstance(err, SchemaViolation)  # the output is not blamed
    assert isinstance(err, StreamError) and err.retryable is False
    assert err.path == ("x",) and err.pointer == "/x"
    assert err.pattern == pattern and err.value == ALMOST and err.timeout == FAST
    assert err.offset == len('{"x": "' + ALMOST)
    assert str(err).startswith("/x: the pattern ") and repr(pattern) in str(err)
    with pytest.raises(PatternTimeout):  # sticky
        tracker.close()


@pytest.mark.parametrize("pattern", ["^(a|aa)+$", "^(a|a)*$"])
def test_re2_decides_the_issues_patterns_in_linear_time(pattern: str) -> None:
    # The issue's own patterns have no lookaround: RE2 judges them exactly, so the final
    # check gives a verdict instead of running out (the prefix checks still run out, and
    # defer to it). A string of 100,000 characters would take the regex package ages.
    assert compile_ecma(pattern)._linear is not None
    # One letter 100,000 times is a loop to the repetition check: off, the pattern judges.
    tracker = FieldTracker(_string_schema(pattern), regex_timeout=FAST, runaway=None)
    with pytest.raises(SchemaViolation) as info:
        tracker.feed('{"x": "' + "a" * 100_000 + '!"}')
    assert info.value.keyword == "pattern" and info.value.path == ("x",)
    ok = FieldTracker(_string_schema(pattern), regex_timeout=FAST, runaway=None)
    ok.feed('{"x": "' + "a" * 100_000 + '"}')
    assert ok.close() == {"x": "a" * 100_000}


def test_the_same_values_are_judged_when_the_pattern_is_not_hostile() -> None:
    # The budget changes nothing for an ordinary pattern: the same text, a verdict.
    tracker = FieldTracker(_string_schema("^a+$"), regex_timeout=FAST)
    with pytest.raises(SchemaViolation) as info:
        tracker.feed('{"x": "' + ALMOST + '"}')
    assert info.value.keyword == "pattern" and info.value.offset == len('{"x": "' + "a" * 40)
    ok = FieldTracker(_string_schema("^a+$"), regex_timeout=FAST)
    ok.feed('{"x": "' + "a" * 40 + '"}')
    assert ok.close() == {"x": "a" * 40}


def test_a_prefix_check_that_runs_out_defers_and_the_final_check_decides() -> None:
    # The prefix pattern drops the lookahead, so it backtracks; the exact one does not and
    # matches ("ab" at the end): a false reject would be a SchemaViolation here.
    pattern = "^(?=[^b]*$)(a|aa)+$|ab"
    text = "a" * 40 + "b"
    loose = compile_ecma(pattern)._loose
    assert loose is not None
    with pytest.raises(TimeoutError):  # independent: the prefix check does run out
        loose.search(text, partial=True, timeout=FAST)
    for size in (1, 3, len(text) + 10):
        tracker = FieldTracker(_string_schema(pattern), regex_timeout=FAST)
        doc = '{"x": "' + text + '"}'
        for piece in chunks(doc, size):
            tracker.feed(piece)
        assert tracker.close() == {"x": text}


def test_a_prefix_check_that_ran_out_is_not_run_again_in_the_same_tracker() -> None:
    budget = Budget(FAST)
    pattern = regex.compile(r"^(a|aa)+$", regex.V1)
    token = enter(budget)
    try:
        assert could(pattern, ALMOST, whole=True) is True
        assert pattern in budget.spent
        assert could(pattern, "!", whole=True) is True  # no longer judged: deferred
    finally:
        leave(token)
    assert could(pattern, "!", whole=True) is False  # another budget still judges it


def test_a_final_check_outside_a_tracker_uses_the_default_budget() -> None:
    compiled = compile_ecma(HOSTILE[0])
    with pytest.raises(BudgetSpent) as info:
        compiled.search("a" * 60 + "!")
    assert info.value.timeout == DEFAULT_REGEX_TIMEOUT and info.value.length == 61


def test_pattern_properties_name_the_key() -> None:
    schema = {"type": "object", "patternProperties": {HOSTILE[0]: {"type": "integer"}}}
    tracker = FieldTracker(schema, regex_timeout=FAST)
    with pytest.raises(PatternTimeout) as info:
        tracker.feed(json.dumps({ALMOST: 1}))
    assert info.value.path == (ALMOST,) and info.value.pattern == HOSTILE[0]


def test_a_pydantic_pattern_checked_early_is_budgeted(monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic's engine takes no lookaround, so the issue's pattern itself, with RE2 off.
    monkeypatch.setattr("sdk._regex._ecma.compile_linear", lambda pattern: None)

    class M(pydantic.BaseModel):
        x: Annotated[str, pydantic.Field(pattern="^(a|aa)+$")]

    tracker = FieldTracker(M, regex_timeout=FAST)
    with pytest.raises(PatternTimeout) as info:
        tracker.feed(json.dumps({"x": ALMOST}))
    assert info.value.pointer == "/x" and info.value.pattern == "^(a|aa)+$"


def test_a_pydantic_pattern_gets_pydantics_verdict_from_re2() -> None:
    class N(pydantic.BaseModel):
        x: Annotated[str, pydantic.Field(pattern="^(a|aa)+$")]

    with pytest.raises(pydantic.ValidationError):
        N.model_validate_json(json.dumps({"x": ALMOST}))  # the oracle: pydantic refuses
    tracker = FieldTracker(N, regex_timeout=FAST)
    with pytest.raises(SchemaViolation) as info:
        tracker.feed(json.dumps({"x": ALMOST}))
    assert info.value.pointer == "/x" and info.value.keyword == "pattern"


def test_a_regex_constraint_is_budgeted() -> None:
    tracker = TextTracker(Regex("(?=a)(a|aa)+"), regex_timeout=FAST)
    for piece in chunks(ALMOST, 5):
        tracker.feed(piece)  # prefix checks run out: deferred
    with pytest.raises(PatternTimeout) as info:
        tracker.finish()
    assert info.value.path == () and info.value.pattern == "(?=a)(a|aa)+"
    fine = TextTracker(Regex("(?=a)(a|aa)+"), regex_timeout=FAST)
    fine.feed("a" * 40)
    assert fine.close() == "a" * 40


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), (-1.0, ValueError), (float("inf"), ValueError), ("1", TypeError)],
)
def test_the_option_is_checked_where_it_is_given(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="regex_timeout"):
        split_options({"regex_timeout": value}, where="stream", request=False)
    with pytest.raises(error, match="regex_timeout"):
        FieldTracker(PERSON, regex_timeout=value)


@pytest.mark.anyio
async def test_a_pattern_timeout_is_not_retried() -> None:
    doc = '{"x": "' + ALMOST + '"}'
    source = Scripted(chunks(doc), chunks('{"x": "aa"}'))
    with pytest.raises(PatternTimeout):
        async with stream_structured(
            source, schema=_string_schema(HOSTILE[0]), retry=Retry(3), regex_timeout=FAST
        ) as s:
            await s.result()
    assert len(source.attempts) == 1


@pytest.mark.anyio
@pytest.mark.timeout(120)  # without a budget the hostile stream blocks the loop for hours
async def test_a_hostile_stream_does_not_stall_another_stream_on_the_same_loop() -> None:
    log: list[tuple[str, int]] = []
    hostile_point = anyio.Event()
    tail = 200  # chunks the hostile stream still sends after its hostile one

    async def hostile_source(_: Any) -> Any:
        yield '{"x": "'
        yield ALMOST  # its prefix check runs out here (once: later prefixes are deferred)
        hostile_point.set()
        for i in range(tail):
            await anyio.lowlevel.checkpoint()
            log.append(("hostile", i))
            yield "a"
        yield '"}'

    good_doc = json.dumps({"name": "Ada", "role": "admin", "tags": ["x", "y", "z"]})

    async def good_source(_: Any) -> Any:
        await hostile_point.wait()
        for i, piece in enumerate(chunks(good_doc, 3)):
            await anyio.lowlevel.checkpoint()
            log.append(("good", i))
            yield piece

    outcome: dict[str, Any] = {}

    async def run_hostile() -> None:
        try:
            async with stream_structured(
                hostile_source, schema=_string_schema(HOSTILE[0]), regex_timeout=FAST
            ) as s:
                await s.result()
        except PatternTimeout as exc:
            outcome["hostile"] = exc
            log.append(("hostile", -1))

    async def run_good() -> None:
        async with stream_structured(good_source, schema=PERSON) as s:
            outcome["good"] = await s.result()
        log.append(("good", -1))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_hostile)
        tg.start_soon(run_good)

    assert outcome["good"] == json.loads(good_doc)
    assert isinstance(outcome["hostile"], PatternTimeout)
    good_done = log.index(("good", -1))
    hostile_done = log.index(("hostile", -1))
    assert good_done < hostile_done  # the good stream finished first...
    hostile_chunks_before = sum(1 for who, i in log[:good_done] if who == "hostile" and i >= 0)
    assert hostile_chunks_before < tail  # ... while the hostile one was still streaming
    good_chunks = [i for who, i in log if who == "good" and i >= 0]
    assert good_chunks == list(range(len(chunks(good_doc, 3))))


UNEVALUATED = {
    "type": "object",
    "properties": {"k": {"type": "integer"}},
    "patternProperties": {"^(a|aa)+$": {"type": "integer"}},
    "unevaluatedProperties": {"type": "string"},
}


@pytest.mark.timeout(60)  # jsonschema's own re.search took ~45 minutes on this key
def test_the_unevaluated_judge_matches_patterns_as_the_tracker_does() -> None:
    # unevaluatedProperties is judged by jsonschema, whose keywords call re.search: inside the
    # judge that is the ECMA-262 reading under the budget (RE2 here), not Python's re.
    tracker = FieldTracker(UNEVALUATED, regex_timeout=FAST)
    tracker.feed(json.dumps({ALMOST: "x"}))
    assert tracker.close() == {ALMOST: "x"}
    refused = FieldTracker(UNEVALUATED, regex_timeout=FAST)
    with pytest.raises(SchemaViolation) as info:
        refused.feed(json.dumps({ALMOST: 1}))
        refused.close()
    assert info.value.keyword == "unevaluatedProperties"


def test_the_judge_reads_patterns_as_ecma_and_jsonschema_elsewhere_is_untouched() -> None:
    import jsonschema

    schema = {"patternProperties": {"^\\d$": {"type": "integer"}}, "unevaluatedProperties": False}
    tracker = FieldTracker(schema)
    with pytest.raises(SchemaViolation):  # "\u0663" is no ECMA-262 \d: the key is unevaluated
        tracker.feed(json.dumps({"\u0663": 1}))
        tracker.close()
    # jsonschema used directly keeps Python's reading (\d is any Unicode digit there).
    jsonschema.Draft202012Validator(schema).validate({"\u0663": 1})


def test_the_option_reaches_the_clients_streams() -> None:
    # Client.stream (request=True) and stream_structured (request=False) resolve it alike.
    for request in (True, False):
        config, _ = split_options({"regex_timeout": 0.5}, where="stream", request=request)
        assert config.regex_timeout == 0.5


@pytest.mark.timeout(60)  # the regex package's compile of it does not finish
def test_a_regex_format_value_that_would_take_hours_to_compile_is_judged_on_its_syntax() -> None:
    schema = {"type": "object", "properties": {"r": {"type": "string", "format": "regex"}}}
    huge = "((a{1000}){1000}){1000}"
    assert pattern_size(huge) == 10**9 > MAX_EXPANSION
    tracker = FieldTracker(schema, formats="assert")
    tracker.feed(json.dumps({"r": huge}))
    assert tracker.close() == {"r": huge}  # valid ECMA-262: accepted, at once
    bad = FieldTracker(schema, formats="assert")
    with pytest.raises(SchemaViolation) as info:
        bad.feed(json.dumps({"r": "((a{1000}){1000}){1000}(?P<x>)"}))  # Python's syntax
        bad.close()
    assert info.value.keyword == "format"
    # What counts is what the regex package writes out: the least counts, not the largest.
    wide = "^[a-z]{1,65535}$"
    assert pattern_size(wide) == 4
    accepted = FieldTracker(schema, formats="assert")
    accepted.feed(json.dumps({"r": wide}))
    assert accepted.close() == {"r": wide}


# The budget is the check's own thread's CPU time (issue 38, section 2): the ``regex`` package's
# own clock is the process's, which other busy threads advance too (the local engine's llama.cpp
# threads decoding beside an HTTP stream), so a check that used a third of its budget in its
# own work ran out.

OWN_BUDGET = 0.3  # seconds: large enough that the clocks' granularity does not matter


def _needing(pattern: regex.Pattern[str], low: float, high: float, *, partial: bool) -> str:
    """``"a" * n + "!"`` whose whole failed match (``partial``: as a prefix check makes it)
    takes this thread between ``low`` and ``high`` seconds of its CPU time, alone, with no
    budget; for ``^(a|aa)+$``, about x1.6 a character."""
    for n in range(16, 60):
        text = "a" * n + "!"
        begun = time.thread_time()
        assert pattern.fullmatch(text, partial=partial) is None
        own = time.thread_time() - begun
        if own > high:
            break
        if own >= low:
            return text
    pytest.fail(f"no length of {pattern.pattern!r} took {low}-{high} s of CPU time alone")


@contextlib.contextmanager
def _busy_threads(count: int) -> Iterator[None]:
    """``count`` threads hashing in a loop, in C with the GIL released (as llama.cpp's decoding
    threads run): each advances the process's CPU clock as fast as it gets a core."""
    stop = threading.Event()
    begun = threading.Barrier(count + 1)
    data = b"x" * (1 << 20)

    def spin() -> None:
        begun.wait()
        while not stop.is_set():
            hashlib.sha256(data).digest()

    threads = [threading.Thread(target=spin, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    begun.wait()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        assert not any(thread.is_alive() for thread in threads)


@pytest.mark.parametrize("check", ["final", "prefix"])
def test_a_check_under_its_budget_completes_beside_busy_threads(check: str) -> None:
    """A check that needs a quarter to a half of its budget of its own thread's CPU time, beside
    six threads that keep the process's CPU clock running about seven times as fast: it
    completes, with the verdict (the old process-clock budget ran out here: the final check
    raised, the prefix check deferred with "maybe")."""
    pattern = regex.compile(r"^(a|aa)+$", regex.V1)
    text = _needing(pattern, 0.25 * OWN_BUDGET, 0.5 * OWN_BUDGET, partial=check == "prefix")
    budget = Budget(OWN_BUDGET)
    with _busy_threads(6):
        token = enter(budget)
        try:
            process, own = time.process_time(), time.thread_time()
            if check == "final":
                verdict = fullmatch(pattern, pattern.pattern, text)
            else:
                verdict = could(pattern, text, whole=True)
            process, own = time.process_time() - process, time.thread_time() - own
        finally:
            leave(token)
    assert verdict is False  # judged: the "!" cannot be part of a match
    assert pattern not in budget.spent
    # The premise: the other threads spent the process's clock past the budget meanwhile.
    assert process > OWN_BUDGET, f"the busy threads did not compete ({process:.3f} s in all)"


def test_a_check_over_its_budget_still_runs_out_beside_busy_threads() -> None:
    """A hostile check (four characters more: about x6.5 the work) runs out all the same, once
    its own thread spent (nearly) its budget in one run: other threads' CPU never makes it run
    out sooner."""
    pattern = regex.compile(r"^(a|aa)+$", regex.V1)
    text = _needing(pattern, 0.25 * OWN_BUDGET, 0.5 * OWN_BUDGET, partial=False)[:-1] + "aaaa!"
    budget = Budget(OWN_BUDGET)
    with _busy_threads(6):
        token = enter(budget)
        try:
            own = time.thread_time()
            with pytest.raises(BudgetSpent) as info:
                fullmatch(pattern, pattern.pattern, text)
            own = time.thread_time() - own
        finally:
            leave(token)
    assert info.value.timeout == OWN_BUDGET
    assert own >= 0.9 * OWN_BUDGET
