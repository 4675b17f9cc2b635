"""Schema or constraint -> token masks: xgrammar's compiler and matchers, plus the special-token
mask.

One :class:`Grammars` per tokenizer holds what is costly to build: xgrammar's ``TokenizerInfo``
(the decoded vocabulary), a ``GrammarCompiler`` with its cache (a schema or a constraint
compiles once per process; later requests with an equal one reuse it: see ``_constrain`` for
what each request compiles to), and the bitmask of the tokenizer's added/special tokens. One
:class:`Constraint` per request wraps a ``GrammarMatcher``. The JSON layout applies to JSON
Schemas and to the JSON segments of structural tags (tools included).

Why the extra mask: xgrammar's ``TokenizerInfo`` lists no special tokens for SmolLM2's
tokenizer, so its masks let ``<|im_start|>``, ``<|endoftext|>`` and friends into JSON strings
(they decode to printable text). Every added or special token except the stop tokens is therefore
cleared from every mask; the stop tokens stay, and the grammar only allows them at the end.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from sdk._local._constrain import GrammarSpec
from sdk._local._deps import require
from sdk._local._layout import (
    BOUNDED_SPACE,
    JSON_FORMATS,
    JsonFormat,
    bounded_ebnf,
    escaped_strings,
    laid_out,
    layout_options,
)
from sdk._local._mask_budget import (
    SKELETONS,
    CompileBudget,
    build_budget,
    in_thread,
    plan_ready,
    planned,
    skeleton_text,
    without_patterns,
)
from sdk._local._xgr_schema import xgr_grammar, xgr_plan

__all__ = ["BOUNDED_SPACE", "JSON_FORMATS", "Constraint", "Grammars", "JsonFormat"]

_SPEC_CACHE = 64
"""How many compiled constraints (JSON Schemas included) :class:`Grammars` keeps."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    grammar: Any
    """xgrammar's CompiledGrammar."""


class Grammars:
    """Everything per tokenizer: vocabulary info, the compiler (with cache), masks.

    Thread-safe: requests may compile and build matchers from several threads.
    """

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        *,
        json_format: JsonFormat = "bounded",
        stop_token_ids: Collection[int] | None = None,
        budget: float | None = None,
    ) -> None:
        self.budget = CompileBudget(budget)
        """How long a JSON Schema's compile may take before the widened schema's mask is
        used (``sdk._local._mask_budget``; None: no limit)."""
        xgr = require("xgrammar")
        torch = require("torch")
        if json_format not in JSON_FORMATS:
            raise ValueError(f"json_format must be one of {JSON_FORMATS}, not {json_format!r}")
        self._xgr = xgr
        self.vocab_size = vocab_size
        """Rows of the model's logits (the lm_head width); masks cover exactly this many."""
        self.json_format: JsonFormat = json_format
        self.info = xgr.TokenizerInfo.from_huggingface(
            tokenizer,
            vocab_size=vocab_size,
            stop_token_ids=sorted(stop_token_ids) if stop_token_ids else None,
        )
        self.stop_token_ids: frozenset[int] = frozenset(self.info.stop_token_ids)
        """Tokens that end a generation (the tokenizer's EOS)."""
        self.decoded_vocab: list[bytes] = list(self.info.decoded_vocab)
        """The bytes each token id stands for (what the grammar matches)."""
        self._compiler = xgr.GrammarCompiler(self.info, cache_enabled=True)
        self._specs: OrderedDict[GrammarSpec, _Compiled] = OrderedDict()
        self._lock = threading.Lock()
        self._skeletons = {t: in_thread(partial(self._compile_text, t)) for t in SKELETONS}
        """The budget's last fallbacks (``_mask_budget.skeleton``: any object, array, value),
        compiled in the background from the start (about 0.1 s each here), kept for good."""
        self.special_token_ids: frozenset[int] = (
            frozenset(i for i in _added_token_ids(tokenizer) if i < vocab_size)
            - self.stop_token_ids
        )
        """Added/special tokens no grammar may produce (see the module docstring)."""
        allowed = xgr.allocate_token_bitmask(1, vocab_size)
        words = allowed[0].tolist()
        for token_id in self.special_token_ids:
            word, bit = divmod(token_id, 32)
            words[word] = _int32(words[word] & ~(1 << bit))
        allowed[0] = torch.tensor(words, dtype=allowed.dtype)
        self.allowed_mask = allowed
        """An xgrammar bitmask (int32, 1 x ceil(V/32)) with the special tokens' bits cleared."""
        self._torch = torch

    def compile(self, schema: Mapping[str, Any]) -> _Compiled:
        """Compile ``schema`` (cached by its JSON text, as :meth:`compile_spec`)."""
        # Key order is kept: it is the order the grammar writes an object's properties in.
        return self.compile_spec(
            GrammarSpec("json_schema", json.dumps(schema, separators=(",", ":")))
        )

    def _compile_schema(self, text: str, level: int = 0) -> Any:
        """The compiled mask of the JSON Schema ``text``: its plan (``xgr_plan``), or for the
        budget's fallback the plan without patterns (``level`` 1, where the plan is ready) or
        the root's type alone (2, ``_mask_budget.skeleton``)."""
        # Never narrower than the caller's schema (_mask_schema); the check's plan, joined
        # (not waited for by a fallback: without it, the root's type alone).
        inner = build_budget(self.budget.seconds)
        plan = planned(self._plan_key(text), lambda: xgr_plan(text, inner), 0 if level else None)
        if plan is not None and level < 2:
            text = plan.text
            if level:
                text = json.dumps(without_patterns(json.loads(text))[0], separators=(",", ":"))
        elif level:  # compiled once per tokenizer, from the start (see __init__)
            return self._skeletons[skeleton_text(text)].result()
        else:
            text = xgr_plan(text, inner).text
        return self._compile_text(text)

    def _plan_key(self, text: str) -> tuple[str, str, float | None]:
        """The key of the plan of ``text`` the request's check started (``_constrain.check``)."""
        return ("xgr", text, build_budget(self.budget.seconds))

    def _compile_text(self, text: str) -> Any:
        """The compiled mask of the (mask) schema ``text`` under the layout."""
        if self.json_format == "bounded":
            ebnf = bounded_ebnf(text)
            if ebnf is not None:
                try:
                    return self._compiler.compile_grammar(ebnf)
                except RuntimeError:  # the layout's rewrite of a grammar xgrammar built
                    pass  # the layout bounded by characters instead (layout_options)
        grammar = xgr_grammar(text, **layout_options(self.json_format))
        return self._compiler.compile_grammar(escaped_strings(str(grammar)))

    def compile_spec(self, spec: GrammarSpec) -> _Compiled:
        """Compile what a request is decoded under (see ``_constrain``), cached by the spec (the
        last :data:`_SPEC_CACHE` specs), so no layout is rebuilt for a spec seen before."""
        with self._lock:
            hit = self._specs.get(spec)
            if hit is not None:
                self._specs.move_to_end(spec)
                return hit
        compiler = self._compiler
        if spec.kind == "json_schema":  # within the budget, else the widened schema's mask
            grammar, exact = self.budget.run(
                lambda: self._compile_schema(spec.text),
                lambda level: self._compile_schema(spec.text, level),
                lambda late: self._store(spec, _Compiled(late)),
                "a JSON Schema (xgrammar)",
                lambda: plan_ready(self._plan_key(spec.text)),
            )
            return self._store(spec, _Compiled(grammar), exact)
        if spec.kind == "ebnf":
            grammar = compiler.compile_grammar(spec.text)
        elif spec.kind == "regex":
            grammar = compiler.compile_regex(spec.text)
        elif spec.kind == "lark":
            grammar = compiler.compile_lark(spec.text)
        else:
            tag = laid_out(json.loads(spec.text), self.json_format)
            grammar = compiler.compile_structural_tag(json.dumps(tag))
        return self._store(spec, _Compiled(grammar))

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

    def bounded_ebnf(self, schema_text: str) -> str | None:
        """:func:`sdk._local._layout.bounded_ebnf` (kept here for callers of the engine)."""
        return bounded_ebnf(schema_text)

    def constraint(self, schema: Mapping[str, Any], tokenizer: Any) -> Constraint:
        """A fresh matcher for one request, constrained by ``schema``."""
        return Constraint(self, self.compile(schema), tokenizer)

    def constraint_for(self, spec: GrammarSpec, tokenizer: Any) -> Constraint:
        """A fresh matcher for one request, constrained by ``spec``."""
        return Constraint(self, self.compile_spec(spec), tokenizer)

    def clear_cache(self) -> None:
        """Forget every compiled grammar (the next compile of each is cold again)."""
        self._compiler.clear_cache()
        with self._lock:
            self._specs.clear()


def _int32(value: int) -> int:
    """``value``'s low 32 bits as a signed int32 (xgrammar's bitmask dtype)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _added_token_ids(tokenizer: Any) -> set[int]:
    ids = set(getattr(tokenizer, "all_special_ids", ()) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids.update(int(i) for i in decoder)
    return ids


class Constraint:
    """The grammar state of one generation: masks logits, accepts tokens, proposes forced text.

    Not thread-safe; one decode loop owns it.
    """

    def __init__(self, grammars: Grammars, compiled: _Compiled, tokenizer: Any) -> None:
        xgr = grammars._xgr
        self._grammars = grammars
        self._xgr = xgr
        self._tokenizer = tokenizer
        # Unlimited rollback (-1; xgrammar's default since 0.2): a rewind may go back any
        # number of tokens.
        self._matcher = xgr.GrammarMatcher(compiled.grammar, max_rollback_tokens=-1)
        self._bitmask = xgr.allocate_token_bitmask(1, grammars.vocab_size)
        self._allowed = grammars.allowed_mask
        self._device_bitmask: Any = None

    def mask(self, logits: Any) -> None:
        """Set every logit the grammar forbids now to -inf, in place (``logits``: 1 x V)."""
        self._matcher.fill_next_token_bitmask(self._bitmask)
        self._bitmask &= self._allowed
        bitmask = self._bitmask
        if logits.device.type != "cpu":
            if self._device_bitmask is None:
                self._device_bitmask = bitmask.to(logits.device)
            else:
                self._device_bitmask.copy_(bitmask, non_blocking=True)
            bitmask = self._device_bitmask
        self._xgr.apply_token_bitmask_inplace(logits, bitmask, vocab_size=self._grammars.vocab_size)

    def allowed(self) -> set[int]:
        """The token ids the next mask allows (for tests and debugging; costs O(V))."""
        self._matcher.fill_next_token_bitmask(self._bitmask)
        self._bitmask &= self._allowed
        words = self._bitmask[0].tolist()
        return {i for i in range(self._grammars.vocab_size) if (words[i // 32] >> (i % 32)) & 1}

    def accept(self, token_id: int) -> None:
        """Advance past ``token_id``; it must be one the last mask allowed."""
        if not self._matcher.accept_token(token_id):
            raise RuntimeError(f"the grammar rejected token {token_id}, which its mask allowed")

    def accept_text(self, text: str) -> bool:
        """Advance past ``text`` (for tests); False if the grammar rejects it."""
        return bool(self._matcher.accept_string(text))

    def rollback(self, count: int) -> None:
        """Undo the last ``count`` accepted tokens (a stop token included)."""
        if count > 0:
            self._matcher.rollback(count)

    def forced_after(self, text: bytes) -> str:
        """The forced text once ``text`` (bytes the grammar allows now) is accepted; the
        matcher's state is left as it was."""
        if not text:
            return self.forced_text()
        if not self._matcher.accept_string(text):
            raise RuntimeError(f"the grammar rejected {text!r}, which it had accepted before")
        try:
            return str(self._matcher.find_jump_forward_string())
        finally:
            self._matcher.rollback(1)  # accept_string is one step

    def forces(self, token_id: int, text: bytes) -> bool:
        """True when, after ``token_id``, the grammar forces ``text`` (so that writing the
        token means writing the text); False too when the grammar does not allow the token.
        The matcher's state is left as it was."""
        if not self._matcher.accept_token(token_id):
            return False
        try:
            return str(self._matcher.find_jump_forward_string()).encode().startswith(text)
        finally:
            self._matcher.rollback(1)

    @property
    def terminated(self) -> bool:
        """True once the grammar has accepted a stop token: the generation is over."""
        return bool(self._matcher.is_terminated())

    def forced_text(self) -> str:
        """The longest text the grammar allows next and nothing else ("" when it has a choice)."""
        return str(self._matcher.find_jump_forward_string())

    def forced_tokens(self) -> list[int]:
        """The forced text, tokenized as the tokenizer would write it (canonical BPE).

        A proposal only: the decode loop checks each token against the model's own choice,
        because the model may split the same text differently or merge its last characters
        with what follows.
        """
        return self.canonical_tokens(self.forced_text())

    def canonical_tokens(self, text: str) -> list[int]:
        """``text`` tokenized as the tokenizer would write it (no special tokens added)."""
        if not text:
            return []
        ids: list[int] = self._tokenizer.encode(text, add_special_tokens=False)
        return ids
