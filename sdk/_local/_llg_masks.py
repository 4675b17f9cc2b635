"""Schema or constraint -> token masks on the llama.cpp runtime: llguidance, without torch,
transformers or xgrammar.

The twin of :mod:`sdk._local._xgr_masks` (same methods and attributes, so the engine drives
either): one :class:`LlgGrammars` per tokenizer holds the ``llguidance.LLTokenizer`` and a cache
of compiled grammars (each a pristine ``LLMatcher``, copied for a request: the copy shares the
compiled grammar, so a spec seen before costs microseconds); one :class:`LlgConstraint` per
request wraps its ``LLMatcher``. What each spec compiles to is :mod:`sdk._local._llg_specs`.

Special tokens need no extra mask here: llguidance's tokenizer knows them (the llama.cpp one
marks control tokens with a ``0xff`` byte no grammar text contains; the Hugging Face one reads
the tokenizer's special tokens), so no grammar lets them into text, and only the tokenizer's
end-of-sequence tokens end a generation.

Masks are numpy: :meth:`LlgConstraint.mask` fills llguidance's bitmask (int32 words) and sets
the forbidden logits to -inf in place, through one ``unpackbits`` and one ``copyto``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sdk._errors import BackendError
from sdk._local._constrain import GrammarSpec
from sdk._local._deps import require
from sdk._local._layout import JSON_FORMATS, JsonFormat
from sdk._local._llg_specs import llg_grammar, plan_key, plan_within, schema_grammar
from sdk._local._mask_budget import CompileBudget, plan_ready, skeleton_text, without_patterns

__all__ = ["LlgConstraint", "LlgGrammars", "fill_masks"]

_SPEC_CACHE = 64
"""How many compiled constraints (JSON Schemas included) :class:`LlgGrammars` keeps."""

MAX_ITEMS_IN_ROW = 20_000
"""llguidance's ``max_items_in_row`` here (its own default: 2,000): the most Earley items one
row of its parser may hold. An object's optional properties each add about 3 (the bounded
translation) or 4 (llguidance's JSON compiler) items to a row, so the default stopped objects of
~700 optional properties (and ``anyOf``s of ~700 objects) after their first token; 20,000
takes 5,000 (``tests/benchmarks/bench_llg_wide_objects.py``). A bound all the same: the work
of a mask grows with the row."""

STEP_MAX_ITEMS = 200_000
"""llguidance's ``step_max_items`` here (its own default: 50,000): the most Earley items one
mask may build. With the bounded layout's whitespace (llguidance's JSON compiler, past the
1,000 members ``_llg_json`` writes) the default stopped objects of 1,500 optional properties at
their first mask after a value; 200,000 takes 3,000 (the slowest mask 0.15 s), not 5,000."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    grammar: str
    """llguidance's grammar (JSON text)."""
    matcher: Any
    """A pristine ``LLMatcher`` of it, never advanced: each request takes a deep copy."""
    exact: bool = True
    """False for the budget's widened mask: a constraint built on it takes the exact one over
    once it is cached (:meth:`LlgConstraint._take_over`)."""


class LlgGrammars:
    """Everything per tokenizer: llguidance's tokenizer, the compiled grammars (with cache).

    Thread-safe: requests may compile and build matchers from several threads.
    """

    def __init__(
        self,
        ll_tokenizer: Any,
        vocab_size: int,
        decoded_vocab: Sequence[bytes],
        *,
        json_format: JsonFormat = "bounded",
        stop_token_ids: Collection[int] | None = None,
        max_items_in_row: int = MAX_ITEMS_IN_ROW,
        step_max_items: int = STEP_MAX_ITEMS,
        budget: float | None = None,
    ) -> None:
        self.budget = CompileBudget(budget)
        """How long a JSON Schema's compile may take before the widened schema's mask is
        used (``sdk._local._mask_budget``; None: no limit)."""
        self._llg = require("llguidance")
        self._np = require("numpy")
        require("llguidance.numpy")
        if json_format not in JSON_FORMATS:
            raise ValueError(f"json_format must be one of {JSON_FORMATS}, not {json_format!r}")
        self.ll_tokenizer = ll_tokenizer
        """The ``llguidance.LLTokenizer`` every matcher reads tokens with."""
        self.vocab_size = vocab_size
        """Rows of the model's logits (the lm_head width); masks cover exactly this many."""
        self.json_format: JsonFormat = json_format
        self.stop_token_ids: frozenset[int] = frozenset(
            stop_token_ids if stop_token_ids else ll_tokenizer.eos_tokens
        )
        """Tokens that end a generation (the tokenizer's EOS)."""
        self.decoded_vocab: list[bytes] = list(decoded_vocab)
        """The bytes each token id stands for (what the grammar matches)."""
        width = min(vocab_size, ll_tokenizer.vocab_size)
        self._stop_rows = sorted(t for t in self.stop_token_ids if t < width)
        self._eos_only = sorted(set(ll_tokenizer.eos_tokens) - self.stop_token_ids)
        self._specs: OrderedDict[GrammarSpec, _Compiled] = OrderedDict()
        self._skeletons: dict[str, _Compiled] = {}
        """The budget's last fallback, by its schema (``{"type": "object"}`` and the like)."""
        self._lock = threading.Lock()
        self.limits = self._llg.LLParserLimits(
            max_items_in_row=max_items_in_row, step_max_items=step_max_items
        )
        """llguidance's parser limits for every matcher: :data:`MAX_ITEMS_IN_ROW` and
        :data:`STEP_MAX_ITEMS` unless given, llguidance's defaults for the others."""

    def compile(self, schema: Mapping[str, Any]) -> _Compiled:
        """Compile ``schema`` (cached by its JSON text, as :meth:`compile_spec`)."""
        # Key order is kept: it is the order the grammar writes an object's properties in.
        return self.compile_spec(
            GrammarSpec("json_schema", json.dumps(schema, separators=(",", ":")))
        )

    def compile_spec(self, spec: GrammarSpec) -> _Compiled:
        """Compile what a request is decoded under (see ``_llg_specs``), cached by the spec (the
        last :data:`_SPEC_CACHE` specs). Raises ValueError with llguidance's reason when the
        grammar cannot be compiled."""
        with self._lock:
            hit = self._specs.get(spec)
            if hit is not None:
                self._specs.move_to_end(spec)
                return hit
        if spec.kind == "json_schema":  # within the budget, else the widened schema's mask
            compiled, exact = self.budget.run(
                lambda: self._matcher(llg_grammar(spec, self.json_format), spec.kind),
                lambda level: self._wider(spec.text, level),
                lambda late: self._store(spec, late),
                "a JSON Schema (llguidance)",
                lambda: plan_ready(plan_key(spec.text, self.json_format)),
            )
            if not exact:
                compiled = _Compiled(compiled.grammar, compiled.matcher, exact=False)
            return self._store(spec, compiled, exact)
        return self._store(spec, self._matcher(llg_grammar(spec, self.json_format), spec.kind))

    def _matcher(self, grammar: str, kind: str) -> _Compiled:
        # The matcher compiles the grammar (once); a grammar it refuses leaves it in error.
        matcher = self._llg.LLMatcher(self.ll_tokenizer, grammar, log_level=0, limits=self.limits)
        if matcher.is_error():
            reason = str(matcher.get_error()).strip()
            raise ValueError(f"llguidance cannot compile the {kind}: {reason}")
        return _Compiled(grammar, matcher)

    def _wider(self, text: str, level: int) -> _Compiled:
        """The widened schema's mask: the plan's without patterns (1) where the plan is ready,
        else (2) the root's type alone (``_mask_budget.skeleton``, compiled once)."""
        plan = plan_within(text, self.json_format, 0) if level == 1 else None
        if plan is not None:
            return self._matcher(
                schema_grammar(without_patterns(plan.masked)[0], self.json_format), "json_schema"
            )
        wide = skeleton_text(text)
        with self._lock:
            hit = self._skeletons.get(wide)
        if hit is None:
            hit = self._matcher(schema_grammar(json.loads(wide), self.json_format), "json_schema")
            with self._lock:
                self._skeletons[wide] = hit
        return hit

    def _store(self, spec: GrammarSpec, compiled: _Compiled, exact: bool = True) -> _Compiled:
        """Cache ``compiled``; a widened one never replaces the exact one (a late compile
        that ended first)."""
        with self._lock:
            if not exact and spec in self._specs:
                return self._specs[spec]
            self._specs[spec] = compiled
            self._specs.move_to_end(spec)
            while len(self._specs) > _SPEC_CACHE:
                self._specs.popitem(last=False)
        return compiled

    def constraint(self, schema: Mapping[str, Any], tokenizer: Any) -> LlgConstraint:
        """A fresh matcher for one request, constrained by ``schema``."""
        spec = GrammarSpec("json_schema", json.dumps(schema, separators=(",", ":")))
        return self.constraint_for(spec, tokenizer)

    def constraint_for(self, spec: GrammarSpec, tokenizer: Any) -> LlgConstraint:
        """A fresh matcher for one request, constrained by ``spec`` (under the widened mask,
        when its compile ran past the budget, until the exact one is cached)."""
        compiled = self.compile_spec(spec)
        return LlgConstraint(self, compiled, tokenizer, None if compiled.exact else spec)

    def cached(self, spec: GrammarSpec) -> _Compiled | None:
        """The compiled grammar of ``spec`` in the cache, if any (no compile)."""
        with self._lock:
            return self._specs.get(spec)

    def clear_cache(self) -> None:
        """Forget every compiled grammar (the next compile of each is cold again)."""
        with self._lock:
            self._specs.clear()


def _utf8_prefix(data: bytes) -> str:
    """The longest prefix of ``data`` that is whole UTF-8 characters, decoded."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data[: exc.start].decode("utf-8")


class LlgConstraint:
    """The grammar state of one generation: masks logits, accepts tokens, proposes forced text.

    Not thread-safe; one decode loop owns it. ``tokenizer`` (the engine's) is what
    :meth:`canonical_tokens` encodes with (``encode(text, add_special_tokens=False)``); None
    uses llguidance's tokenizer.
    """

    def __init__(
        self,
        grammars: LlgGrammars,
        compiled: _Compiled,
        tokenizer: Any,
        exact_spec: GrammarSpec | None = None,
    ) -> None:
        self._grammars = grammars
        self._exact_spec = exact_spec
        """The spec whose exact mask takes over from this widened one once it is cached (None:
        this is the exact one, or it can no longer take over)."""
        self._written: list[int] = []
        """The tokens accepted so far while :attr:`_exact_spec` waits (replayed on the exact)."""
        self._np = grammars._np
        self._llg_numpy = require("llguidance.numpy")
        self._tokenizer = tokenizer
        with grammars._lock:
            self._matcher = compiled.matcher.deep_copy()
        ll_vocab = grammars.ll_tokenizer.vocab_size
        self._bitmask = self._llg_numpy.allocate_token_bitmask(1, ll_vocab)
        self._width = min(ll_vocab, grammars.vocab_size)
        self._forbidden = self._np.empty(grammars.vocab_size, dtype=bool)
        self._forbidden[self._width :] = True  # rows the tokenizer has no token for
        self._steps: list[tuple[int, bool]] = []
        """Per accepted step: how many tokens it consumed, whether it ended with a stop token."""
        self._prefilled = False
        """True when :func:`fill_masks` filled the bitmask for the matcher's present state."""

    def _fill(self) -> Any:
        """Fill the bitmask for the next token; return which of the V rows it allows."""
        if self._prefilled:
            self._prefilled = False
        else:
            self._llg_numpy.fill_next_token_bitmask(self._matcher, self._bitmask)
        bits = self._np.unpackbits(self._bitmask.view(self._np.uint8), bitorder="little")
        allowed = bits[: self._width].view(bool)
        if self._matcher.is_error():
            # llguidance's mask in its error state (a parser limit) allows its end of sequence
            # alone: nothing may follow, and mask() says why (_dead_end).
            allowed[:] = False
            return allowed
        # The generation's stop tokens end it where the grammar may end, and are allowed too
        # where the grammar itself names one next (Lark's ``<|im_end|>``); llguidance's own
        # end-of-sequence tokens only where they are stop tokens too.
        ending = self._ending()
        for token in self._grammars._eos_only:
            allowed[token] = False
        for token in self._grammars._stop_rows:
            allowed[token] = ending or allowed[token]
        return allowed

    def _ending(self) -> bool:
        """True when the grammar may end here (a stop token is allowed)."""
        matcher = self._matcher
        return bool(matcher.is_accepting() and not matcher.is_error())

    def mask(self, logits: Any) -> None:
        """Set every logit the grammar forbids now to -inf, in place (``logits``: a float
        numpy array of shape (1, V) or (V,))."""
        np = self._np
        allowed = self._fill()
        if not allowed.any():
            raise self._dead_end()
        np.logical_not(allowed, out=self._forbidden[: self._width])
        row = logits[0] if logits.ndim == 2 else logits  # a view: written in place
        np.copyto(row, -np.inf, where=self._forbidden)

    def _dead_end(self) -> BackendError:
        """The error of a mask that allows no token (never sample a forbidden one)."""
        if self._matcher.is_error():
            return self._stopped_error()  # a parser limit, most often
        return BackendError(
            "the grammar allows no token here: it can neither go on nor end here (a token it "
            "names may be outside the model's vocabulary, or an end-of-sequence token that is "
            "not a stop token)"
        )

    def allowed(self) -> set[int]:
        """The token ids the next mask allows (for tests and debugging; costs O(V))."""
        return {int(i) for i in self._np.flatnonzero(self._fill())}

    def _consume(self, tokens: Sequence[int]) -> bool:
        """Consume ``tokens`` if the grammar allows all of them (else leave the state as it was:
        a refused token would put llguidance's matcher in its sticky error state)."""
        tokens = list(tokens)
        self._raise_if_stopped()
        if self._matcher.validate_tokens(tokens) != len(tokens):
            self._raise_if_stopped()
            return False
        if not self._matcher.consume_tokens(tokens):
            self._raise_if_stopped()
            raise RuntimeError(f"llguidance refused tokens it had validated: {tokens}")
        return True

    def _raise_if_stopped(self) -> None:
        """Raise :meth:`_stopped_error` when llguidance's matcher is in its error state."""
        if self._matcher.is_error():
            raise self._stopped_error()

    def _stopped_error(self) -> BackendError:
        """The error of a matcher in its error state: a parser limit reached on text the
        grammar allows (a row of more than ``max_items_in_row`` items, a mask step of more than
        ``step_max_items``), with llguidance's own reason (its first line)."""
        reason = (str(self._matcher.get_error()).strip().splitlines() or ["no reason given"])[0]
        limits = self._grammars.limits
        return BackendError(
            f"llguidance cannot go on with this grammar: {reason} (its parser limits here: "
            f"max_items_in_row {limits.max_items_in_row}, step_max_items "
            f"{limits.step_max_items}; too many alternatives at one point, such as thousands "
            "of optional properties)"
        )

    def accept(self, token_id: int) -> None:
        """Advance past ``token_id``; it must be one the last mask allowed."""
        self._prefilled = False
        if token_id in self._grammars.stop_token_ids:
            self._exact_spec = None  # the generation ends: nothing to take over
            # llguidance reads any stop token as its own end of sequence, and records it only
            # when the grammar could still go on (a stopped matcher takes it as a no-op).
            if not self._ending():
                self._raise_if_stopped()
                self._consume_named_stop(token_id)
                return
            recorded = not self._matcher.is_stopped()
            self._matcher.consume_token(self._grammars.ll_tokenizer.eos_token)
            self._steps.append((int(recorded), True))
            return
        if not self._consume([token_id]):
            raise RuntimeError(f"the grammar rejected token {token_id}, which its mask allowed")
        self._steps.append((1, False))
        if self._exact_spec is not None:
            self._written.append(token_id)
            self._take_over()

    def _take_over(self) -> None:
        """Where this is the budget's widened mask and the exact one is now cached: go on under
        the exact one, the tokens written so far replayed on it (if it takes them all; else
        this generation stays widened: the tracker checks the schema either way)."""
        spec = self._exact_spec
        compiled = self._grammars.cached(spec) if spec is not None else None
        if compiled is None or not compiled.exact:
            return
        self._exact_spec = None
        with self._grammars._lock:
            exact = compiled.matcher.deep_copy()
        tokens, self._written = self._written, []
        if exact.validate_tokens(tokens) == len(tokens) and exact.consume_tokens(tokens):
            self._matcher = exact
            self._prefilled = False

    def _consume_named_stop(self, token_id: int) -> None:
        """Consume stop token ``token_id`` where the grammar cannot end but may name the token
        itself (Lark's ``<|im_end|>``): the generation's last token. llguidance's
        ``validate_tokens`` never counts its end-of-sequence token, so a copy of the matcher
        tries it first (a refused token would leave the matcher in its sticky error state)."""
        if not self._matcher.deep_copy().consume_token(token_id):
            raise RuntimeError(f"the grammar cannot end here: stop token {token_id} refused")
        self._matcher.consume_token(token_id)
        self._steps.append((1, True))

    def accept_text(self, text: str) -> bool:
        """Advance past ``text`` (for tests): one step (as xgrammar's ``accept_string``, so one
        :meth:`rollback` undoes it), its tokens the canonical ones. False if the grammar
        rejects it."""
        tokens = self.canonical_tokens(text)
        if not self._consume(tokens):
            return False
        self._steps.append((len(tokens), False))
        if self._exact_spec is not None:
            self._written.extend(tokens)
            self._take_over()
        return True

    def rollback(self, count: int) -> None:
        """Undo the last ``count`` accepted steps (tokens; a stop token included)."""
        self._prefilled = False
        if count <= 0:
            return
        if count > len(self._steps):
            raise ValueError(f"cannot roll back {count} steps: {len(self._steps)} were accepted")
        tokens = sum(n for n, _ in self._steps[-count:])
        del self._steps[-count:]
        if tokens and self._written:
            del self._written[-tokens:]
        if tokens and not self._matcher.rollback(tokens):
            raise RuntimeError(f"llguidance could not roll back: {self._matcher.get_error()}")

    def _with_tokens(self, tokens: list[int]) -> bytes | None:
        """The forced bytes once ``tokens`` are accepted (None if the grammar refuses them);
        the state is left as it was."""
        if not self._consume(tokens):
            return None
        try:
            return bytes(self._matcher.compute_ff_bytes())
        finally:
            self._matcher.rollback(len(tokens))

    def forced_after(self, text: bytes) -> str:
        """The forced text once ``text`` (bytes the grammar allows now) is accepted; the
        matcher's state is left as it was."""
        if not text:
            return self.forced_text()
        tokens = list(self._grammars.ll_tokenizer.tokenize_bytes(text))
        forced = self._with_tokens(tokens)
        if forced is None:
            raise RuntimeError(f"the grammar rejected {text!r}, which it had accepted before")
        return _utf8_prefix(forced)

    def forces(self, token_id: int, text: bytes) -> bool:
        """True when, after ``token_id``, the grammar forces ``text`` (so that writing the
        token means writing the text); False too when the grammar does not allow the token.
        The matcher's state is left as it was."""
        forced = self._with_tokens([token_id])
        return forced is not None and forced.startswith(text)

    @property
    def terminated(self) -> bool:
        """True once the grammar has accepted a stop token: the generation is over."""
        return bool(self._steps) and self._steps[-1][1]

    def forced_text(self) -> str:
        """The longest text the grammar allows next and nothing else ("" when it has a choice);
        whole characters only (forced bytes that end inside a UTF-8 character stop before it).
        """
        return _utf8_prefix(bytes(self._matcher.compute_ff_bytes()))

    def forced_tokens(self) -> list[int]:
        """The forced text, tokenized as the tokenizer would write it (canonical BPE): a
        proposal the decode loop verifies against the model's own picks."""
        return self.canonical_tokens(self.forced_text())

    def canonical_tokens(self, text: str) -> list[int]:
        """``text`` tokenized as the tokenizer would write it (no special tokens added)."""
        if not text:
            return []
        if self._tokenizer is None:
            return list(self._grammars.ll_tokenizer.tokenize_str(text))
        ids: list[int] = self._tokenizer.encode(text, add_special_tokens=False)
        return ids


_executor: Any = None
_executor_lock = threading.Lock()


def fill_masks(constraints: Sequence[LlgConstraint]) -> None:
    """Fill the next mask of every one of ``constraints`` in one call, llguidance's native
    threads computing them in parallel (``LLExecutor``, ``fill_next_token_bitmask_par``); the
    next :meth:`LlgConstraint.mask` of each uses it (unless its matcher moves first). The
    scheduler calls it for the first row of every generation of a round."""
    global _executor
    if len(constraints) < 2:
        return  # one mask: filled where it is used, as before
    llg_numpy = constraints[0]._llg_numpy
    with _executor_lock:
        if _executor is None:
            _executor = require("llguidance").LLExecutor()
        executor = _executor
    by_width: dict[int, list[LlgConstraint]] = {}
    for constraint in constraints:
        by_width.setdefault(constraint._bitmask.shape[1], []).append(constraint)
    for width, group in by_width.items():
        bitmask = constraints[0]._np.full((len(group), width), -1, dtype=constraints[0]._np.int32)
        llg_numpy.fill_next_token_bitmask_par(
            executor, [(c._matcher, i) for i, c in enumerate(group)], bitmask
        )
        for i, constraint in enumerate(group):
            constraint._bitmask[0] = bitmask[i]
            constraint._prefilled = True
