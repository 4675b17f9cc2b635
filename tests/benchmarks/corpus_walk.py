"""The real-schema corpus walked through the local engine's masks, on both runtimes (issue 42):
the material ``tests/sdk/local/test_corpus_documents.py`` asserts on, and a script that prints
its figures.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/corpus_walk.py [--runtime llama.cpp|torch]

Each schema is the caller's as ``Client.stream()`` hands it to the engine (the canonical form).
Each passing document is written compactly in the grammar's key order (:func:`written`) and
walked through a fresh mask: its canonical tokens, each checked against the mask, then the stop
token; then its bytes one at a time (each byte its own single-byte token on llguidance; on
xgrammar, whose matcher reads bytes, the text). A document the mask refuses is *closed* when the
project's strict rule excludes it (jsonschema on the strict rewrite names the object); else it is
refused at a property name (*order*: the grammar's key order differs from the one written) or
elsewhere (a narrowing), with the shortest refused prefix.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from tests.benchmarks.mask_engine_cases import compact, schema_order

CORPUS = Path(__file__).resolve().parents[1] / "data" / "schema-corpus"


@dataclass(frozen=True, slots=True)
class Document:
    """One labelled document: its schema's name, the schema's file, the label, the file."""

    schema_name: str
    schema_path: Path
    passes: bool
    path: Path

    @property
    def id(self) -> str:
        """The file's path under ``tests/data/schema-corpus/``."""
        return self.path.relative_to(CORPUS).as_posix()

    def value(self) -> Any:
        return json.loads(self.path.read_text(encoding="utf-8"))

    def schema(self) -> Any:
        return json.loads(self.schema_path.read_text(encoding="utf-8"))


def documents() -> list[Document]:
    """Every vendored document: check-jsonschema's (``documents/``, their schemas in
    ``schemastore/``) and SchemaStore's own (``schemastore-tests/<name>/``)."""
    found = [
        Document(
            p.parts[-3],
            CORPUS / "schemastore" / f"{p.parts[-3]}.json",
            p.parts[-2] == "positive",
            p,
        )
        for p in sorted((CORPUS / "documents").glob("*/*/*.json"))
    ]
    found += [
        Document(p.parts[-3], p.parents[1] / "schema.json", p.parts[-2] == "positive", p)
        for p in sorted((CORPUS / "schemastore-tests").glob("*/*/*.json"))
    ]
    return found


def written(value: Any, canonical: Any) -> str:
    """``value`` written compactly in the grammar's key order (the ``anyOf``/``oneOf`` branch
    each value takes, the pattern property each key matches)."""
    base = Draft202012Validator(canonical)
    return compact(
        schema_order(value, canonical, fits=lambda v, m: base.evolve(schema=m).is_valid(v))
    )


def closure(masked: Any, value: Any) -> str:
    """Where the project's strict rule excludes ``value`` (the JSON path of the outermost
    place jsonschema reports under the strict rewrite), "" when it does not."""
    from sdk._local._llg_strict import strict_schema

    paths = [e.json_path for e in Draft202012Validator(strict_schema(masked)).iter_errors(value)]
    # jsonschema's order of the errors varies between runs: the outermost, then the first
    return min(paths, key=lambda p: (p.count(".") + p.count("["), p), default="")


def byte_tokens(ll_tokenizer: Any) -> dict[int, int]:
    """Each byte's own single-byte token on llguidance's tokenizer."""
    tokens: dict[int, int] = {}
    for i in range(ll_tokenizer.vocab_size):
        data = ll_tokenizer.decode_bytes([i])
        if len(data) == 1 and data[0] not in tokens:
            tokens[data[0]] = i
    return tokens


def first_refused(accepts: Any, text: str) -> str:
    """The shortest prefix of ``text`` that ``accepts`` refuses (a binary search), "" when it
    takes the whole."""
    if accepts(text):
        return ""
    low, high = 0, len(text)  # accepts(text[:low]) holds, accepts(text[:high]) does not
    while high - low > 1:
        middle = (low + high) // 2
        if accepts(text[:middle]):
            low = middle
        else:
            high = middle
    return text[:high]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one runtime's mask does with one passing document: ``admitted``; ``closed`` (the
    strict rule's object, ``where``); ``refused`` (a narrowing: ``where`` is the shortest prefix
    refused); ``unmasked`` (the schema is refused: ``where`` is the reason)."""

    kind: str
    where: str = ""


def refusal(prefix: str) -> Outcome:
    """A refusal at ``prefix``: ``order`` when it ends inside a property name or at the comma
    before one (the grammar
    writes that object's properties in another order than :func:`written` did: it merges the
    properties an ``allOf``/``anyOf`` branch names with the object's own), else ``refused``."""
    in_string, escaped, key = False, False, False
    stack: list[str] = []
    last = ""
    for char in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            key = bool(stack) and stack[-1] == "{" and last in "{,"
        elif char in "{[":
            stack.append(char)
        elif char in "}]":
            stack.pop()
        if not char.isspace() and not in_string:
            last = char
    ended_key = not in_string and prefix.endswith('"') and key
    next_key = not in_string and prefix.endswith(",") and bool(stack) and stack[-1] == "{"
    return Outcome("order" if (in_string and key) or ended_key or next_key else "refused", prefix)


class LlgWalk:
    """Passing documents through the llama.cpp runtime's (llguidance's) mask."""

    def __init__(self, ll_tokenizer: Any, tokenizer: Any) -> None:
        from sdk._local._llg_masks import LlgGrammars

        vocab = [ll_tokenizer.decode_bytes([i]) for i in range(ll_tokenizer.vocab_size)]
        self.grammars = LlgGrammars(
            ll_tokenizer, ll_tokenizer.vocab_size, vocab, json_format="compact"
        )
        self.tokenizer = tokenizer
        self.bytes = byte_tokens(ll_tokenizer)

    def plan(self, canonical: Any) -> Any:
        from sdk._local._llg_specs import schema_plan

        return schema_plan(json.dumps(canonical), "compact")

    def tokens_pass(self, canonical: Any, text: str) -> bool:
        """``text``'s canonical tokens taken by a fresh matcher, then the stop token allowed
        by the mask (one mask computed: a token is in a mask exactly when the matcher takes
        it)."""
        constraint = self.grammars.constraint(canonical, self.tokenizer)
        if not constraint.accept_text(text):
            return False
        return bool(self.tokenizer.eos_token_id in constraint.allowed())

    def prefix_passes(self, canonical: Any, text: str) -> bool:
        """``text`` taken one byte (one single-byte token) at a time by a fresh matcher."""
        constraint = self.grammars.constraint(canonical, self.tokenizer)
        tokens = [self.bytes[b] for b in text.encode("utf-8")]
        return bool(constraint._matcher.validate_tokens(tokens) == len(tokens))

    def outcome(self, document: Document) -> Outcome:
        from sdk._errors import BackendError, UnsupportedConstraint
        from sdk._schema._compile import compile_schema

        canonical = compile_schema(document.schema()).schema_dict()
        value = document.value()
        try:
            plan = self.plan(canonical)
        except (UnsupportedConstraint, BackendError) as exc:
            return Outcome("unmasked", str(exc).splitlines()[0])
        text = written(value, canonical)
        where = closure(plan.masked, value)
        admitted = self.tokens_pass(canonical, text) and self.prefix_passes(canonical, text)
        if admitted:
            return Outcome("admitted", where)  # where: a closure the mask does not enforce
        if where:
            return Outcome("closed", where)
        return refusal(first_refused(lambda t: self.prefix_passes(canonical, t), text))


class XgrWalk:
    """Passing documents through the torch runtime's (xgrammar's) mask."""

    def __init__(self, tokenizer: Any) -> None:
        from sdk._local._xgr_masks import Grammars

        self.tokenizer = tokenizer
        self.grammars = Grammars(
            tokenizer,
            len(tokenizer),
            json_format="compact",
            stop_token_ids=[tokenizer.eos_token_id],
        )

    def prefix_passes(self, canonical: Any, text: str, end: bool = False) -> bool:
        from sdk._local._constrain import GrammarSpec

        constraint = self.grammars.constraint_for(
            GrammarSpec("json_schema", json.dumps(canonical)), self.tokenizer
        )
        if not constraint.accept_text(text):
            return False
        return not end or self.tokenizer.eos_token_id in constraint.allowed()

    def outcome(self, document: Document) -> Outcome:
        from sdk._errors import BackendError, UnsupportedConstraint
        from sdk._local._llg_specs import schema_plan
        from sdk._schema._compile import compile_schema

        canonical = compile_schema(document.schema()).schema_dict()
        value = document.value()
        try:
            self.prefix_passes(canonical, "")
        except (UnsupportedConstraint, BackendError, RuntimeError) as exc:
            return Outcome("unmasked", str(exc).splitlines()[0])
        text = written(value, canonical)
        masked = schema_plan(json.dumps(canonical), "compact").masked
        where = closure(masked, value)
        if self.prefix_passes(canonical, text, end=True):
            return Outcome("admitted", where)
        if where:
            return Outcome("closed", where)
        return refusal(first_refused(lambda t: self.prefix_passes(canonical, t), text))


def outcomes(walk: LlgWalk | XgrWalk) -> Iterator[tuple[Document, Outcome]]:
    """Each passing document whose schema the tracker takes, with the walk's outcome."""
    from sdk._errors import SchemaError
    from sdk._schema._compile import compile_schema

    for document in documents():
        if not document.passes:
            continue
        try:
            compile_schema(document.schema())
        except SchemaError:
            continue
        yield document, walk.outcome(document)


def relaxations(walk: LlgWalk | XgrWalk, schema_path: Path) -> tuple[Any, ...]:
    """What the runtime's plan relaxes of the schema at ``schema_path`` (its canonical form),
    each a :class:`~sdk._local._mask_schema.Relaxation` (``explain`` reports the same)."""
    from sdk._local._xgr_schema import xgr_plan
    from sdk._schema._compile import compile_schema

    canonical = compile_schema(json.loads(schema_path.read_text("utf-8"))).schema_dict()
    if isinstance(walk, LlgWalk):
        return tuple(walk.plan(canonical).relaxations)
    return tuple(xgr_plan(json.dumps(canonical)).relaxations)


def main() -> None:
    from sdk._local._model import default_gguf_path, gguf_tokenizer
    from tests.sdk.local._local_support import import_llguidance_hf

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", choices=["llama.cpp", "torch"], default="llama.cpp")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    tokenizer = gguf_tokenizer(default_gguf_path())
    walk: LlgWalk | XgrWalk
    if args.runtime == "torch":
        walk = XgrWalk(tokenizer)
    else:
        walk = LlgWalk(import_llguidance_hf().from_tokenizer(tokenizer), tokenizer)
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    schemas: set[Path] = set()
    for document, outcome in outcomes(walk):
        schemas.add(document.schema_path)
        counts[outcome.kind] += 1
        if outcome.kind != "admitted" or args.verbose:
            print(f"{document.id}: {outcome.kind} {outcome.where[-120:]!r}")
    relaxed: Counter[str] = Counter()
    for path in sorted(schemas):
        keywords = {note.keyword for note in relaxations(walk, path)}
        relaxed.update(keywords or {"(exact)"})
    print(
        f"{args.runtime}: {relaxed.pop('(exact)', 0)} schemas masked exactly; the others relax "
        + ", ".join(f"{keyword} in {n}" for keyword, n in relaxed.most_common())
    )
    print(
        f"{args.runtime}: {len(schemas)} schemas, {sum(counts.values())} passing documents: "
        + ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
        + f" ({time.perf_counter() - started:.1f} s)"
    )


if __name__ == "__main__":
    main()
