"""A JSON Schema's mask compiles within its budget, or the generation decodes under the
widened schema's mask at once and the exact one is cached when its compile ends
(``sdk/_local/_mask_budget.py``). A compile held on an event stands for a slow one, so nothing
here depends on the machine's speed."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from sdk._local import LocalBackend
from sdk._local._constrain import GrammarSpec
from sdk._local._mask_budget import CompileBudget, without_patterns

SCHEMA = (
    '{"type":"object","properties":{"id":{"type":"string","pattern":"^[0-9]+$"}},"required":["id"]}'
)


def test_a_compile_within_the_budget_is_the_exact_one() -> None:
    budget = CompileBudget(5.0)
    late: list[str] = []
    assert budget.run(lambda: "exact", lambda level: f"wider {level}", late.append, "x") == (
        "exact",
        True,
    )
    assert budget.fallbacks == 0
    assert late == []
    assert CompileBudget(None).run(lambda: "exact", lambda level: "", late.append, "x") == (
        "exact",
        True,
    )


def test_past_the_budget_the_wider_mask_comes_at_once_and_the_exact_one_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release, done = threading.Event(), threading.Event()
    late: list[str] = []

    def slow() -> str:
        release.wait(30)
        return "exact"

    def cache(value: str) -> None:
        late.append(value)
        done.set()

    budget = CompileBudget(0.05)
    with caplog.at_level("WARNING", logger="fieldstream"):
        result = budget.run(slow, lambda level: f"wider {level}", cache, "a JSON Schema")
    assert result == ("wider 1", False)  # returned while the exact compile still runs
    assert budget.fallbacks == 1
    assert late == []
    assert "took over its 0.05 s budget" in caplog.text
    release.set()
    assert done.wait(30)
    assert late == ["exact"]


def test_the_pattern_free_fallback_too_may_run_past_it_then_any_value() -> None:
    release = threading.Event()

    def wider(level: int) -> str:
        if level == 1:
            release.wait(30)
        return f"wider {level}"

    try:
        result = CompileBudget(0.05).run(
            lambda: str(release.wait(30)), wider, lambda late: None, "x"
        )
        assert result == ("wider 2", False)
    finally:
        release.set()


def test_without_patterns_drops_each_pattern_and_pattern_property() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "^x", "maxLength": 3}},
        "patternProperties": {"^b": {"type": "integer"}},
        "additionalProperties": False,
        "$defs": {"d": {"items": [{"pattern": "y"}]}},
    }
    out, notes = without_patterns(schema)
    assert out["properties"]["a"] == {"type": "string", "maxLength": 3}
    assert "patternProperties" not in out
    assert out["additionalProperties"] == {"anyOf": [{"type": "integer"}]}
    assert out["$defs"]["d"]["items"] == [{}]
    assert {(n.path, n.keyword) for n in notes} == {
        ("/properties/a", "pattern"),
        ("/", "patternProperties"),
        ("/$defs/d/items/0", "pattern"),
    }
    assert schema["properties"]["a"]["pattern"] == "^x"  # the input is not changed


def test_the_budget_is_an_option_with_its_default() -> None:
    from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET

    assert LocalBackend().mask_compile_budget == DEFAULT_MASK_COMPILE_BUDGET
    assert LocalBackend(mask_compile_budget=None).mask_compile_budget is None
    with pytest.raises(ValueError, match="mask_compile_budget must be > 0"):
        LocalBackend(mask_compile_budget=0)


@pytest.mark.torch  # the tokenizer fixture reads the GGUF through transformers
def test_llguidance_decodes_under_the_wider_mask_while_the_exact_compiles(
    monkeypatch: pytest.MonkeyPatch, ll_tokenizer: Any, tokenizer: Any
) -> None:
    pytest.importorskip("llguidance")
    from sdk._local import _llg_masks

    grammars = _budgeted(ll_tokenizer)
    release, cached = threading.Event(), threading.Event()
    real = _llg_masks.llg_grammar

    def slow(spec: GrammarSpec, json_format: Any) -> str:
        release.wait(30)
        return real(spec, json_format)

    monkeypatch.setattr(_llg_masks, "llg_grammar", slow)
    store = grammars._store

    def stored(spec: GrammarSpec, compiled: Any, exact: bool = True) -> Any:
        out = store(spec, compiled, exact)
        if exact:
            cached.set()
        return out

    monkeypatch.setattr(grammars, "_store", stored)
    spec = GrammarSpec("json_schema", SCHEMA)
    wide = grammars.constraint_for(spec, tokenizer)
    assert wide.accept_text('{"id":"abc"}')  # the pattern is the tracker's, for now
    assert CompileBudget.taken(grammars) == 1
    release.set()
    assert cached.wait(30)
    exact = grammars.constraint_for(spec, tokenizer)
    assert not exact.accept_text('{"id":"abc"}')
    assert exact.accept_text('{"id":"123"}')


@pytest.mark.torch
def test_xgrammar_decodes_under_the_wider_mask_while_the_exact_compiles(
    monkeypatch: pytest.MonkeyPatch, tokenizer: Any
) -> None:
    pytest.importorskip("xgrammar")
    from sdk._local._xgr_masks import Grammars

    grammars = Grammars(
        tokenizer,
        len(tokenizer),
        json_format="compact",
        stop_token_ids=[tokenizer.eos_token_id],
        budget=0.05,
    )
    release, cached = threading.Event(), threading.Event()
    real = grammars._compile_schema

    def slow(text: str, level: int = 0) -> Any:
        if level == 0:
            release.wait(30)
        return real(text, level)

    monkeypatch.setattr(grammars, "_compile_schema", slow)
    store = grammars._store

    def stored(spec: GrammarSpec, compiled: Any, exact: bool = True) -> Any:
        out = store(spec, compiled, exact)
        if exact:
            cached.set()
        return out

    monkeypatch.setattr(grammars, "_store", stored)
    spec = GrammarSpec("json_schema", SCHEMA)
    assert grammars.constraint_for(spec, tokenizer).accept_text('{"id":"abc"}')
    assert CompileBudget.taken(grammars) == 1
    release.set()
    assert cached.wait(30)
    assert not grammars.constraint_for(spec, tokenizer).accept_text('{"id":"abc"}')
    assert grammars.constraint_for(spec, tokenizer).accept_text('{"id":"123"}')


def test_the_torch_check_of_a_schema_too_slow_to_build_is_bounded_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("xgrammar")
    from sdk._local import _xgr_schema

    release = threading.Event()
    real = _xgr_schema._xgr_refusal

    def slow(schema: Any) -> str:
        if "pattern" in json.dumps(schema):  # the caller's schema: slow; without patterns: not
            release.wait(30)
        return real(schema)

    monkeypatch.setattr(_xgr_schema, "_xgr_refusal", slow)
    text = SCHEMA.replace('"required"', '"title":"slow","required"')  # a plan not cached yet
    try:
        plan = _xgr_schema.xgr_plan(text, 0.05)
    finally:
        release.set()
    assert plan.refused == "its grammar took over the 0.05 s budget to build"
    assert json.loads(plan.text)["properties"]["id"] == {"type": "string"}
    assert [(r.path, r.keyword) for r in plan.relaxations] == [("/properties/id", "pattern")]


# -- the check-time plan is bounded too (issue 42, item 2) -----------------------------------

# Large enough (over SMALL_SCHEMA bytes) that the check waits for its plan at most the budget.
BIG = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        **{f"p{i}": {"type": "string", "description": "x" * 40} for i in range(120)},
    },
    "required": ["id"],
}
BIG_TEXT = json.dumps(BIG, separators=(",", ":"))


def _held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every llguidance plan not yet made until the event is set (a slow plan)."""
    from sdk._local import _llg_specs
    from sdk._local._mask_budget import forget_plans

    forget_plans()
    _llg_specs.schema_plan.cache_clear()
    release = threading.Event()
    real = _llg_specs.schema_plan

    def slow(text: str, json_format: Any) -> Any:
        release.wait(30)
        return real(text, json_format)

    monkeypatch.setattr(_llg_specs, "schema_plan", slow)
    return release


def test_a_small_schema_s_plan_is_always_waited_for_a_large_one_s_within_the_budget() -> None:
    from sdk._local._mask_budget import SMALL_SCHEMA, plan_wait

    assert len(BIG_TEXT) > SMALL_SCHEMA
    assert plan_wait(SCHEMA, 0.02) is None
    assert plan_wait(BIG_TEXT, 0.02) == 0.02
    assert plan_wait(BIG_TEXT, None) is None


def test_the_llguidance_check_returns_past_the_plan_budget_and_the_plan_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("llguidance")
    from sdk._local._llg_specs import check_llg, plan_within
    from sdk._local._mask_report import llg_report
    from tests.sdk.local._local_support import request_for

    release = _held(monkeypatch)
    try:
        check_llg(request_for("x", BIG), "compact", budget=0)  # returns: not refused, not waited
        assert plan_within(BIG_TEXT, "compact", 0) is None  # still being made
        pending = llg_report(BIG_TEXT, "compact", 0)  # the stream's report does not wait either
        assert [(r.path, r.keyword, r.kind) for r in pending.relaxations] == [("/", "*", "pending")]
    finally:
        release.set()
    plan = plan_within(BIG_TEXT, "compact", None)  # the same plan, joined
    assert plan is not None
    assert plan.masked["properties"]["id"] == {"type": "string", "pattern": "^[0-9]+$"}
    assert llg_report(BIG_TEXT, "compact").is_exact


def test_a_malformed_small_schema_is_refused_at_the_check_whatever_the_budget() -> None:
    pytest.importorskip("llguidance")
    from sdk import UnsupportedConstraint
    from sdk._local._llg_specs import check_llg
    from tests.sdk.local._local_support import request_for

    malformed = {"type": "object", "properties": {"a": {}}, "required": [["a"]]}
    with pytest.raises(UnsupportedConstraint, match="malformed"):
        check_llg(request_for("x", malformed), "bounded", budget=0)


def _budgeted(ll_tokenizer: Any) -> Any:
    """llguidance's grammars over the packaged model's vocabulary, compact, a 0.05 s budget."""
    pytest.importorskip("llguidance")
    from sdk._local._llg_masks import LlgGrammars

    vocab = [ll_tokenizer.decode_bytes([i]) for i in range(ll_tokenizer.vocab_size)]
    return LlgGrammars(
        ll_tokenizer, ll_tokenizer.vocab_size, vocab, json_format="compact", budget=0.05
    )


@pytest.mark.torch  # the tokenizer fixture reads the GGUF through transformers
def test_a_plan_past_the_budget_decodes_under_the_root_type_then_the_exact_mask(
    monkeypatch: pytest.MonkeyPatch, ll_tokenizer: Any, tokenizer: Any
) -> None:
    from sdk._local._llg_specs import check_llg
    from tests.sdk.local._local_support import request_for

    grammars = _budgeted(ll_tokenizer)
    release = _held(monkeypatch)
    spec = GrammarSpec("json_schema", BIG_TEXT)
    valid = ['{"id":"123"}', '{"id":"7","p3":"x","p119":""}']
    try:
        check_llg(request_for("x", BIG), "compact", budget=0)
        wide = [grammars.constraint_for(spec, tokenizer) for _ in valid]
        # No plan yet: the root's type alone, kept for the next request until the exact ends.
        assert CompileBudget.taken(grammars) == 1
        assert all(c.accept_text(doc) for c, doc in zip(wide, valid, strict=True))
        assert grammars.constraint_for(spec, tokenizer).accept_text('{"other":[1]}')
        assert not grammars.constraint_for(spec, tokenizer).accept_text("[1]")  # an object
    finally:
        release.set()
    for thread in threading.enumerate():  # the exact compile, left running, ends and is cached
        if thread.name == "fieldstream-mask-compile":
            thread.join(30)
    for doc in valid:
        assert grammars.constraint_for(spec, tokenizer).accept_text(doc)
    assert not grammars.constraint_for(spec, tokenizer).accept_text('{"id":"abc"}')
    assert CompileBudget.taken(grammars) == 0


def test_the_torch_check_returns_past_the_plan_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xgrammar")
    from sdk._local import _xgr_schema
    from sdk._local._constrain import check
    from sdk._local._mask_budget import build_budget, forget_plans, planned
    from tests.sdk.local._local_support import request_for

    forget_plans()
    _xgr_schema.xgr_plan.cache_clear()
    release = threading.Event()
    real = _xgr_schema.xgr_plan

    def slow(text: str, budget: float | None = None) -> Any:
        release.wait(30)
        return real(text, budget)

    monkeypatch.setattr(_xgr_schema, "xgr_plan", slow)
    key = ("xgr", BIG_TEXT, build_budget(0.01))
    try:
        check(request_for("x", BIG), 0.01)  # returns: not refused, not waited for
        assert planned(key, lambda: None, 0) is None
    finally:
        release.set()
    plan = planned(key, lambda: None, None)
    assert plan is not None
    assert json.loads(plan.text)["properties"]["id"]["pattern"] == "^[0-9]+$"


def test_skeleton_is_the_root_s_type_or_any_value() -> None:
    from sdk._local._mask_budget import SKELETONS, skeleton

    assert skeleton(BIG, "slow")[0] == {"type": "object"}
    assert skeleton({"type": "array", "items": {"$ref": "#/x"}}, "slow")[0] == {"type": "array"}
    assert skeleton({"type": ["object", "null"]}, "slow")[0] == {}
    assert skeleton({"anyOf": [{"type": "object"}]}, "slow")[0] == {}
    assert skeleton(True, "slow") == ({}, skeleton(True, "slow")[1])
    assert [r.reason for r in skeleton(BIG, "slow")[1]] == ["slow: any object"]
    assert {json.dumps(skeleton(s, "")[0], separators=(",", ":")) for s in (BIG, [], {})} <= set(
        SKELETONS
    )


@pytest.mark.torch  # the tokenizer fixture reads the GGUF through transformers
def test_a_widened_generation_takes_the_exact_mask_over_once_it_is_cached(
    monkeypatch: pytest.MonkeyPatch, ll_tokenizer: Any, tokenizer: Any
) -> None:
    grammars = _budgeted(ll_tokenizer)
    release = _held(monkeypatch)
    spec = GrammarSpec("json_schema", BIG_TEXT)
    try:
        going = grammars.constraint_for(spec, tokenizer)  # will take the exact one over
        strayed = grammars.constraint_for(spec, tokenizer)  # wrote what the exact refuses
        assert CompileBudget.taken(grammars) == 1
        assert going.accept_text('{"id":"')
        assert strayed.accept_text('{"id":"a')
    finally:
        release.set()
    for thread in threading.enumerate():
        if thread.name == "fieldstream-mask-compile":
            thread.join(30)
    assert going.accept_text("1")  # the exact mask takes over here, "{"id":"1" replayed on it
    assert not going.accept_text("x")  # the pattern, masked now
    assert going.accept_text('2"}')
    assert strayed.accept_text("b")  # the exact one refuses "a": this one stays widened
    assert strayed.accept_text('c"}')
    going.rollback(2)  # the steps written before the take-over roll back on the exact one
    assert not going.accept_text("z")
    assert going.accept_text('1"}')
