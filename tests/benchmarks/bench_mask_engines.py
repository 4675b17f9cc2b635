"""xgrammar against llguidance as exact mask engines for JSON Schema (a script, not a test).

    .venv/bin/python tests/benchmarks/bench_mask_engines.py [--quick] [--timeout 60] [--list]

Six configurations, each with the packaged SmolLM2 GGUF's tokenizer (read through
transformers, as ``sdk/_local/_model.py`` does; ``xgrammar.TokenizerInfo.from_huggingface`` and
``llguidance.hf.from_tokenizer`` of the same object, EOS the only stop token):

* ``xgrammar``: what the local engine compiled before issue 42 (``sdk/_local/_xgr_masks.py``
  now gives xgrammar the strict rule's rewrite with ``strict_mode`` off):
  ``compile_json_schema(strict_mode=True)`` under the ``compact`` layout of
  ``sdk/_local/_layout.py`` (no whitespace, separators ``,`` and ``:``), its cache off; each mask
  is ANDed with the special-token mask as the engine does (counted in "apply");
* ``xgr-loose``: the same with ``strict_mode=False`` (undeclared properties and items allowed
  where the schema does not forbid them, as JSON Schema has it), for comparison;
* ``xgr-bounded``: the engine's default layout, ``bounded`` (``bounded_ebnf``: the model's own
  whitespace where pretty-printers put it, each gap bounded), ``strict_mode=True``;
* ``llguidance``: ``LLMatcher.grammar_from_json_schema`` with compact separators and no
  flexible whitespace, every other option at its default (unimplemented keywords and ``oneOf``
  refused);
* ``llg-lenient``: the same plus ``lenient`` (unimplemented keywords ignored, as xgrammar
  ignores them) and ``coerce_one_of`` (``oneOf`` read as ``anyOf``);
* ``llg-bounded``: ``llg-lenient`` with flexible whitespace, each gap the bounded layout's
  (:data:`LLG_BOUNDED_SPACE`; llguidance allows it before ``,`` and ``:`` too).

The instances are compact, which every layout allows; the bounded ones show what the
whitespace choices cost in compile time and mask time.

Corpora: (a) the official JSON-Schema-Test-Suite (``tests/data/json-schema-test-suite``, the
main files of every draft, ``optional/`` left out), each schema given its draft's ``$schema``;
(b) the real-world schemas of ``tests/data/schema-corpus`` (no instances: a seeded random walk
of up to 64 tokens through each compiled grammar stands in for them).

Each schema compiles in a worker process that holds all six configurations (so they are timed
in one process, in rotating order, schema by schema); a compile that takes longer than
``--timeout`` seconds, or a worker that dies, is recorded as such and the worker restarted.
"ready" is the time until the first mask is filled (compile, matcher, first mask: llguidance
builds its lexer lazily, xgrammar ahead of time).

Every suite instance is written compactly, its objects' properties in the schema's order (both
engines fix the order of declared properties: :func:`schema_order`), tokenized as the tokenizer
writes it, and walked token by token: fill the mask, apply it to a logits row, check the next
token is allowed, accept it; at the end EOS must be allowed. Where that is refused, two other
writings of the same value are tried: the properties of referenced and combined schemas before
the schema's own (llguidance's order), then whole floats as integers (``1.0`` -> ``1``). A
valid instance refused in every writing is a FALSE REJECTION (valid JSON the model could never
write); "untyped" counts those whose type the schema's root keywords do not name (no ``type``:
an array under a schema of ``properties``, :func:`other_type`), "spelling" the valid instances
let through only as integers, "order" those let through but refused in the suite's own key
order. An invalid instance refused in every writing is one the mask already enforces
(strictness) before fieldstream's validator. Mask cost is the median of fill and of apply
(microseconds per token) over the walks of accepted valid instances (suite) and of the random
walks (real-world).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.mask_engine_cases import (  # noqa: E402
    DRAFTS,
    Case,
    corpus_cases,
    other_type,
    percentile,
    reason_key,
    suite_cases,
)

ENGINES = ("xgrammar", "xgr-loose", "xgr-bounded", "llguidance", "llg-lenient", "llg-bounded")
SHORT = {
    "xgrammar": "xgr",
    "xgr-loose": "xgr-l",
    "xgr-bounded": "xgr-b",
    "llguidance": "llg",
    "llg-lenient": "llg-l",
    "llg-bounded": "llg-b",
}
"""Each configuration's name in the per-keyword table."""
LLG_BOUNDED_SPACE = "( |\\n\\n?[ \\t]{0,20})?"
"""One whitespace gap of the ``bounded`` layout (``BOUNDED_SPACE``) as llguidance's regex."""
_COMPACT = {"item_separator": ",", "key_separator": ":", "whitespace_flexible": False}
LLG_OPTIONS: dict[str, dict[str, Any]] = {
    "llguidance": _COMPACT,
    "llg-lenient": {**_COMPACT, "lenient": True, "coerce_one_of": True},
    "llg-bounded": {
        **_COMPACT,
        "lenient": True,
        "coerce_one_of": True,
        "whitespace_flexible": True,
        "whitespace_pattern": LLG_BOUNDED_SPACE,
    },
}
"""llguidance's JSON options (x-guidance) of each llguidance configuration."""
WALK_TOKENS = 64
"""Tokens of the random walk through a real-world schema's grammar."""


@dataclass(slots=True)
class Outcome:
    """What one configuration made of one case."""

    status: str
    """``compiled``, ``refused``, ``timeout`` or ``crashed``."""
    reason: str = ""
    ready_ms: float = 0.0
    warnings: list[str] = field(default_factory=list)
    """What the compiler said it ignored or approximated (grouped by :func:`reason_key`)."""
    accepted: list[bool] = field(default_factory=list)
    """Per instance: the mask let it through, as written or respelled."""
    respelled: list[bool] = field(default_factory=list)
    """Per instance: refused as written, let through with whole floats as integers."""
    accepted_original: list[bool] = field(default_factory=list)
    """Per instance: let through in the suite's own key order."""
    fill_us: list[float] = field(default_factory=list)
    apply_us: list[float] = field(default_factory=list)


# --- the worker: every configuration in one process -----------------------------------------


class _Engines:
    """The tokenizer and every configuration (built once per worker)."""

    def __init__(self) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        import numpy as np
        import torch
        import xgrammar as xgr

        from sdk._local._layout import bounded_ebnf, layout_options
        from sdk._local._model import default_gguf_path, gguf_tokenizer
        from sdk._local._xgr_masks import Grammars

        self.np, self.torch, self.xgr, self.llg = np, torch, xgr, llguidance
        self.lnp = llguidance.numpy
        self.tokenizer = gguf_tokenizer(default_gguf_path())
        self.vocab = len(self.tokenizer)
        self.eos = int(self.tokenizer.eos_token_id)
        grammars = Grammars(self.tokenizer, self.vocab, stop_token_ids=[self.eos])
        self.xgr_compiler = xgr.GrammarCompiler(grammars.info, cache_enabled=False)
        self.xgr_allowed = grammars.allowed_mask
        self.xgr_options = layout_options("compact")
        self.layout_options, self.bounded_ebnf = layout_options, bounded_ebnf
        self.ll_tokenizer = llguidance.hf.from_tokenizer(self.tokenizer, eos_token=self.eos)
        # xgrammar's C++ warnings go to file descriptor 2: into a file, read after each compile.
        self._stderr = tempfile.TemporaryFile()
        os.dup2(self._stderr.fileno(), 2)

    def stderr_warnings(self) -> list[str]:
        """The warnings written to stderr since the last call."""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace")
        self._stderr.seek(0)
        self._stderr.truncate()
        return [line.split("Warning:", 1)[1] for line in text.splitlines() if "Warning:" in line]

    def tokens(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False)
        return ids

    def matcher(self, engine: str, schema_text: str) -> _Matcher:
        if engine == "xgr-bounded":  # as Grammars._compile_schema, without its cache
            ebnf = self.bounded_ebnf(schema_text)
            if ebnf is not None:
                return _XgrMatcher(self, self.xgr_compiler.compile_grammar(ebnf))
            grammar = self.xgr_compiler.compile_json_schema(
                schema_text, strict_mode=True, **self.layout_options("bounded")
            )
            return _XgrMatcher(self, grammar)
        if engine in ("xgrammar", "xgr-loose"):
            grammar = self.xgr_compiler.compile_json_schema(
                schema_text, strict_mode=engine == "xgrammar", **self.xgr_options
            )
            return _XgrMatcher(self, grammar)
        return _LlgMatcher(self, engine, schema_text)


class _Matcher:
    bitmask: Any

    def fill(self) -> None:
        raise NotImplementedError

    def apply(self) -> None:
        raise NotImplementedError

    def accept(self, token: int) -> bool:
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError

    def words(self) -> Any:
        """The bitmask as a numpy int32 vector."""
        raise NotImplementedError

    def warnings(self, engines: _Engines) -> list[str]:
        """What the compiler warned about this grammar."""
        raise NotImplementedError


class _XgrMatcher(_Matcher):
    def __init__(self, engines: _Engines, grammar: Any) -> None:
        xgr = engines.xgr
        self._xgr = xgr
        self._matcher = xgr.GrammarMatcher(grammar, max_rollback_tokens=-1)
        self.bitmask = xgr.allocate_token_bitmask(1, engines.vocab)
        self._allowed = engines.xgr_allowed
        self._logits = engines.torch.zeros((1, engines.vocab), dtype=engines.torch.float32)
        self._vocab = engines.vocab

    def fill(self) -> None:
        self._matcher.fill_next_token_bitmask(self.bitmask)

    def apply(self) -> None:
        self.bitmask &= self._allowed
        self._xgr.apply_token_bitmask_inplace(self._logits, self.bitmask, vocab_size=self._vocab)

    def accept(self, token: int) -> bool:
        return bool(self._matcher.accept_token(token))

    def reset(self) -> None:
        self._matcher.reset()

    def words(self) -> Any:
        return self.bitmask[0].numpy()

    def warnings(self, engines: _Engines) -> list[str]:
        return engines.stderr_warnings()


class _LlgMatcher(_Matcher):
    def __init__(self, engines: _Engines, engine: str, schema_text: str) -> None:
        llg = engines.llg
        self._lnp = engines.lnp
        grammar = llg.LLMatcher.grammar_from_json_schema(schema_text, defaults=LLG_OPTIONS[engine])
        self._matcher = llg.LLMatcher(engines.ll_tokenizer, grammar, log_level=0)
        if self._matcher.is_error():
            raise ValueError(self._matcher.get_error())
        self.bitmask = self._lnp.allocate_token_bitmask(1, engines.vocab)
        self._logits = engines.np.zeros((1, engines.vocab), dtype=engines.np.float32)

    def fill(self) -> None:
        self._lnp.fill_next_token_bitmask(self._matcher, self.bitmask)
        if self._matcher.is_error():  # lazy errors (lexer fuel...) show on the first mask
            raise ValueError(self._matcher.get_error())

    def apply(self) -> None:
        self._lnp.apply_token_bitmask_inplace(self._logits, self.bitmask)

    def accept(self, token: int) -> bool:
        return bool(self._matcher.consume_token(token))

    def reset(self) -> None:
        self._matcher.reset()

    def words(self) -> Any:
        return self.bitmask[0]

    def warnings(self, engines: _Engines) -> list[str]:
        return [str(w) for w in self._matcher.get_grammar_warnings()]


def _allows(matcher: _Matcher, token: int) -> bool:
    return bool((int(matcher.words()[token // 32]) >> (token % 32)) & 1)


def _walk(matcher: _Matcher, tokens: list[int], eos: int, times: list[tuple[float, float]]) -> bool:
    """Write ``tokens`` then EOS through the mask; True if every one was allowed."""
    clock = time.perf_counter
    try:
        for token in [*tokens, eos]:
            start = clock()
            matcher.fill()
            filled = clock()
            matcher.apply()
            times.append((filled - start, clock() - filled))
            if not _allows(matcher, token):
                return False
            if token != eos and not matcher.accept(token):
                raise RuntimeError(f"token {token} allowed by the mask, refused by the matcher")
        return True
    finally:
        matcher.reset()


def _random_walk(engines: _Engines, matcher: _Matcher, seed: str, out: Outcome) -> None:
    np = engines.np
    rng = random.Random(seed)
    for _ in range(WALK_TOKENS):
        start = time.perf_counter()
        matcher.fill()
        filled = time.perf_counter()
        matcher.apply()
        out.fill_us.append((filled - start) * 1e6)
        out.apply_us.append((time.perf_counter() - filled) * 1e6)
        words = np.ascontiguousarray(matcher.words()).view(np.uint8)
        allowed = np.flatnonzero(np.unpackbits(words, bitorder="little")[: engines.vocab])
        choices = [int(t) for t in allowed if t != engines.eos]
        if not choices or not matcher.accept(rng.choice(choices)):
            break


def _run(engines: _Engines, engine: str, case: Case, conn: Connection) -> None:
    engines.stderr_warnings()  # what earlier calls printed: not this compile's
    start = time.perf_counter()
    try:
        matcher = engines.matcher(engine, case.schema_text)
        matcher.fill()
    except Exception as exc:  # a refusal, whatever its type: the message says why
        conn.send(Outcome("refused", reason_key(f"{type(exc).__name__}: {exc}")))
        return
    out = Outcome("compiled", ready_ms=(time.perf_counter() - start) * 1e3)
    out.warnings = sorted({reason_key(w) for w in matcher.warnings(engines)})
    conn.send(out)  # the compile is done: the parent's compile timeout ends here
    matcher.reset()
    if not case.instances:
        _random_walk(engines, matcher, case.name, out)
    for instance in case.instances:
        times: list[tuple[float, float]] = []
        ok = _walk(matcher, engines.tokens(instance.text), engines.eos, times)
        if not ok and instance.reordered != instance.text:
            times = []
            ok = _walk(matcher, engines.tokens(instance.reordered), engines.eos, times)
        respelled = False
        if not ok and instance.respelled != instance.text:
            respelled = _walk(matcher, engines.tokens(instance.respelled), engines.eos, [])
        out.accepted.append(ok or respelled)
        out.respelled.append(respelled)
        if instance.original != instance.text:
            ok_original = _walk(matcher, engines.tokens(instance.original), engines.eos, [])
        else:
            ok_original = ok
        out.accepted_original.append(ok_original)
        if ok and instance.valid:
            out.fill_us.extend(f * 1e6 for f, _ in times)
            out.apply_us.extend(a * 1e6 for _, a in times)
    conn.send(out)


def _worker(conn: Connection) -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    engines = _Engines()
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        _run(engines, job[0], job[1], conn)


class Pool:
    """One worker process, restarted after a timeout or a crash."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child,), daemon=True)
        self._proc.start()
        child.close()
        if not self._conn.poll(600) or self._conn.recv() != "ready":
            raise RuntimeError("the worker did not start")

    def _restart(self) -> None:
        self._proc.kill()
        self._proc.join()
        self._start()

    def run(self, engine: str, case: Case, timeout: float) -> Outcome:
        self._conn.send((engine, case))
        try:
            if not self._conn.poll(timeout):
                self._restart()
                return Outcome("timeout", f"no grammar after {timeout:g} s")
            first: Outcome = self._conn.recv()
            if first.status != "compiled":
                return first
            if not self._conn.poll(max(timeout, 120.0)):
                self._restart()
                return Outcome("timeout", "the walks ran past their time")
            done: Outcome = self._conn.recv()
            return done
        except (EOFError, ConnectionError):
            code = self._proc.exitcode
            self._restart()
            return Outcome("crashed", f"worker died (exit code {code})")

    def close(self) -> None:
        self._conn.send(None)
        self._proc.join(10)


# --- the report -----------------------------------------------------------------------------


def _compile_table(cases: list[Case], results: dict[str, list[Outcome]]) -> None:
    print(
        f"{'corpus':11} {'engine':12} {'schemas':>7} {'compiled':>8} {'refused':>7} "
        f"{'crash/to':>8} {'warned':>6} {'ready ms med':>12} {'p95':>8} {'max':>8}"
    )
    for corpus in ("suite", "real-world"):
        rows = [i for i, c in enumerate(cases) if c.corpus == corpus]
        if not rows:
            continue
        for engine in ENGINES:
            outs = [results[engine][i] for i in rows]
            counts = Counter(o.status for o in outs)
            ready = [o.ready_ms for o in outs if o.status == "compiled"]
            print(
                f"{corpus:11} {engine:12} {len(outs):7} {counts['compiled']:8} "
                f"{counts['refused']:7} {counts['timeout'] + counts['crashed']:8} "
                f"{sum(bool(o.warnings) for o in outs):6} {percentile(ready, 0.5):12.1f} "
                f"{percentile(ready, 0.95):8.1f} "
                f"{max(ready, default=float('nan')):8.1f}"
            )


def _reasons(cases: list[Case], results: dict[str, list[Outcome]], top: int) -> None:
    for corpus in ("suite", "real-world"):
        for engine in ENGINES:
            reasons = Counter(
                o.reason
                for c, o in zip(cases, results[engine], strict=True)
                if c.corpus == corpus and o.status != "compiled"
            )
            warned = Counter(
                w
                for c, o in zip(cases, results[engine], strict=True)
                if c.corpus == corpus
                for w in o.warnings
            )
            for title, counter in (("not compiled", reasons), ("compiled with warnings", warned)):
                if counter:
                    print(f"\n{engine}, {corpus}: {title}, top reasons (schemas)")
                    for reason, count in counter.most_common(top):
                        print(f"  {count:5}  {reason}")


def _instances(cases: list[Case], results: dict[str, list[Outcome]], listing: bool) -> None:
    suite = [i for i, c in enumerate(cases) if c.corpus == "suite"]
    if not suite:
        return
    common = [i for i in suite if all(results[e][i].status == "compiled" for e in ENGINES)]
    for title, rows in (("each engine's compiled schemas", suite), ("compiled by all", common)):
        print(
            f"\nsuite instances, {title}:\n{'engine':12} {'schemas':>7} {'valid':>6} "
            f"{'accepted':>8} {'FALSE REJ':>9} {'untyped':>7} {'spelling':>8} {'order':>5} "
            f"{'invalid':>7} {'rejected':>8} {'strict %':>8}"
        )
        for engine in ENGINES:
            n_schemas = valid = accepted = untyped = spelling = order = invalid = rejected = 0
            for i in rows:
                out = results[engine][i]
                if out.status != "compiled":
                    continue
                n_schemas += 1
                for inst, ok, respelled, ok_orig in zip(
                    cases[i].instances,
                    out.accepted,
                    out.respelled,
                    out.accepted_original,
                    strict=True,
                ):
                    if inst.valid:
                        valid += 1
                        accepted += ok
                        untyped += not ok and other_type(cases[i].schema_text, inst.text)
                        spelling += respelled
                        order += ok and not ok_orig
                    else:
                        invalid += 1
                        rejected += not ok
            print(
                f"{engine:12} {n_schemas:7} {valid:6} {accepted:8} {valid - accepted:9} "
                f"{untyped:7} {spelling:8} {order:5} {invalid:7} {rejected:8} "
                f"{100 * rejected / max(invalid, 1):8.1f}"
            )
    _by_keyword(cases, results, suite, listing)


def _by_keyword(
    cases: list[Case], results: dict[str, list[Outcome]], rows: list[int], listing: bool
) -> None:
    # keyword -> engine -> [valid, false rejections, order-only, invalid, rejected, refused]
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0] * 6))
    rejections: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for i in rows:
        case = cases[i]
        for engine in ENGINES:
            out = results[engine][i]
            cell = table[case.keyword][engine]
            if out.status != "compiled":
                cell[5] += 1
                continue
            for inst, ok, ok_orig in zip(
                case.instances, out.accepted, out.accepted_original, strict=True
            ):
                if inst.valid:
                    cell[0] += 1
                    cell[1] += not ok
                    cell[2] += ok and not ok_orig
                    if not ok:
                        rejections[case.keyword][engine].append(
                            f"{case.name} {inst.description!r}: {inst.text[:80]}"
                        )
                else:
                    cell[3] += 1
                    cell[4] += not ok
    heads = [" ".join(f"{SHORT[e]:>{w}}" for e in ENGINES) for w in (5, 7, 7)]
    print(
        "\nper keyword (suite file), each engine over its compiled schemas:\n"
        f"{'':22} | {'schemas refused':^{len(heads[0])}} | "
        f"{'false rejections/valid':^{len(heads[1])}} | "
        f"{'invalid rejected/invalid':^{len(heads[2])}}"
    )
    print(f"{'keyword':22} | {heads[0]} | {heads[1]} | {heads[2]}")
    for keyword in sorted(table):
        cells = table[keyword]
        refused = " ".join(f"{cells[e][5]:5}" for e in ENGINES)
        false = " ".join(f"{f'{cells[e][1]}/{cells[e][0]}':>7}" for e in ENGINES)
        strict = " ".join(f"{f'{cells[e][4]}/{cells[e][3]}':>7}" for e in ENGINES)
        print(f"{keyword[:22]:22} | {refused} | {false} | {strict}")
    print("\nfalse rejections, by keyword" + ("" if listing else " (3 each; --list: all)"))
    for keyword in sorted(rejections):
        for engine in ENGINES:
            lines = rejections[keyword][engine]
            if not lines:
                continue
            print(f"  {keyword} / {engine}: {len(lines)}")
            for line in lines if listing else lines[:3]:
                print(f"      {line}")


def _mask_costs(cases: list[Case], results: dict[str, list[Outcome]]) -> None:
    print(
        f"\nmask cost per token (us; fill = the engine's mask, apply = onto a 1 x V float32 row)"
        f"\n{'corpus':11} {'engine':12} {'tokens':>7} {'fill med':>8} {'p95':>7} "
        f"{'apply med':>9} {'p95':>7} {'sum med':>8}"
    )
    for corpus in ("suite", "real-world"):
        for engine in ENGINES:
            fills: list[float] = []
            applies: list[float] = []
            for case, out in zip(cases, results[engine], strict=True):
                if case.corpus == corpus:
                    fills.extend(out.fill_us)
                    applies.extend(out.apply_us)
            if not fills:
                continue
            sums = [f + a for f, a in zip(fills, applies, strict=True)]
            print(
                f"{corpus:11} {engine:12} {len(fills):7} {percentile(fills, 0.5):8.0f} "
                f"{percentile(fills, 0.95):7.0f} {percentile(applies, 0.5):9.0f} "
                f"{percentile(applies, 0.95):7.0f} {percentile(sums, 0.5):8.0f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="draft 2020-12 and 6 real schemas")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per compile")
    parser.add_argument("--list", action="store_true", help="every false rejection")
    parser.add_argument("--top", type=int, default=8, help="refusal reasons shown per engine")
    args = parser.parse_args()
    drafts = ["draft2020-12"] if args.quick else list(DRAFTS)
    cases = suite_cases(drafts) + corpus_cases(6 if args.quick else None)
    results: dict[str, list[Outcome]] = {engine: [] for engine in ENGINES}
    pool = Pool()
    started = time.perf_counter()
    try:
        for index, case in enumerate(cases):
            shift = index % len(ENGINES)  # each configuration goes first as often
            for engine in ENGINES[shift:] + ENGINES[:shift]:
                results[engine].append(pool.run(engine, case, args.timeout))
            if index % 100 == 99:
                print(f"  ... {index + 1}/{len(cases)} schemas", file=sys.stderr, flush=True)
    finally:
        pool.close()
    print(
        f"{sum(c.corpus == 'suite' for c in cases)} suite schemas ({', '.join(drafts)}), "
        f"{sum(c.corpus == 'real-world' for c in cases)} real-world schemas, "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    _compile_table(cases, results)
    _reasons(cases, results, args.top)
    _instances(cases, results, args.list)
    _mask_costs(cases, results)


if __name__ == "__main__":
    main()
