"""Real-world schemas of every draft and their labelled documents, streamed through the tracker,
judged against jsonschema's validator for each schema's own draft (the oracle).

The corpus is SchemaStore's repository (github.com/SchemaStore/schemastore), not vendored (60 MB):
``src/schemas/json/<name>.json`` are the schemas as published (draft-04, -06, -07, 2019-09 and
2020-12), ``src/test/<name>/`` the documents each must accept and ``src/negative_test/<name>/``
those it must refuse (JSON, YAML and TOML; a document that is not JSON once loaded, a YAML date
say, is left out and counted). Every schema of the repository is a resource of the registry both
sides are given (``https://json.schemastore.org/<file>`` and its own ``$id``), so references
between them resolve; nothing is fetched. A schema without an ``$id`` is given its URL as one
(it is published there: relative references resolve against it).

For each schema with documents: :func:`sdk.compile_schema` (``formats`` an annotation, as for
jsonschema without a format checker); a refusal is counted with its keyword. Each document is
dumped as JSON and streamed in random chunks (seeded by the file's name) through a
:class:`~sdk._trackers._field.FieldTracker`; its verdict (a ``SchemaViolation`` at any point, or
none through ``close()``) must be jsonschema's (``validator_for(schema)`` with the same registry). A
document jsonschema cannot judge (an unresolvable reference, a pattern Python's ``re`` cannot
read) is counted apart, with the tracker's verdict beside SchemaStore's label; so is one that
runs past ``--timeout`` seconds. A refused schema is listed with whether jsonschema could judge
its documents.

Run: ``python tests/fuzz/corpus_dialects.py /path/to/schemastore`` (a checkout, or any folder
with its ``src/``). It prints per draft the schemas compiled and refused, the documents judged
and the disagreements, then each disagreement and refusal.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import signal
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sdk import SchemaError, compile_schema
from sdk._errors import SchemaViolation
from sdk._schema import _compile
from sdk._schema._vocabulary import dialect_named
from sdk._trackers._field import FieldTracker

BASE = "https://json.schemastore.org/"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(text)
    if path.suffix == ".toml":
        return tomllib.loads(text)
    raise ValueError(path.suffix)


def _registry(schemas: dict[str, Any]) -> referencing.Registry:
    """Every schema of the repository by its URI, retrieved when first named (a registry built
    from all of them at once is crawled whole on a lookup, and one malformed schema then breaks
    every lookup)."""
    mapping: dict[str, Any] = {}
    for name, contents in schemas.items():
        mapping[BASE + name] = contents
        if isinstance(contents, dict):
            for key in ("$id", "id"):
                own = contents.get(key)
                if isinstance(own, str) and own.startswith("http"):
                    mapping.setdefault(own.rstrip("#"), contents)

    def retrieve(uri: str) -> referencing.Resource:
        # A relative name met where no base URI is in force (a draft-07 root whose $id a
        # sibling $ref overrides) names the file beside the schema on the site.
        contents = mapping.get(uri.rstrip("#"), mapping.get(BASE + uri.rstrip("#")))
        if not isinstance(contents, (dict, bool)):
            raise referencing.exceptions.NoSuchResource(ref=uri)
        return referencing.Resource.from_contents(
            contents, default_specification=referencing.jsonschema.DRAFT202012
        )

    return referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]


def _oracle(validator: Any, doc: Any) -> bool | str:
    try:
        return next(iter(validator.iter_errors(doc)), None) is None
    except Exception as exc:  # jsonschema cannot judge it
        return f"{type(exc).__name__}: {str(exc)[:120]}"


def _tracker(compiled: Any, text: str, rng: random.Random) -> bool:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12))))
    tracker = FieldTracker(compiled)
    try:
        for a, b in itertools.pairwise([0, *cuts, len(text)]):
            tracker.feed(text[a:b])
        tracker.close()
    except SchemaViolation:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="a SchemaStore checkout (holding src/)")
    parser.add_argument("--timeout", type=int, default=20, help="seconds per document")
    parser.add_argument("--only", help="only schemas whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="name each schema as it runs")
    args = parser.parse_args()
    src = args.root / "src"
    schemas: dict[str, Any] = {}
    for path in sorted((src / "schemas" / "json").glob("*.json")):
        try:
            schemas[path.name] = json.loads(path.read_text(encoding="utf-8-sig"))
        except ValueError:
            continue
    registry = _registry(schemas)
    signal.signal(signal.SIGALRM, _alarm)

    tally: dict[str, dict[str, int]] = {}
    wrong: list[str] = []
    refusals: list[str] = []
    oracle_errors: list[str] = []
    for name, schema in schemas.items():
        if args.only and args.only not in name:
            continue
        stem = name.removesuffix(".json")
        docs = [(p, True) for p in sorted((src / "test" / stem).glob("*"))]
        docs += [(p, False) for p in sorted((src / "negative_test" / stem).glob("*"))]
        if not docs:
            continue
        declared = schema.get("$schema") if isinstance(schema, dict) else None
        draft = (dialect_named(declared) if isinstance(declared, str) else None) or "2020-12"
        if isinstance(schema, dict) and "$id" not in schema and "id" not in schema:
            # As published: retrieved from its URL, which relative references resolve against.
            schema = {"id" if draft == "draft-04" else "$id": BASE + name, **schema}
        counts = tally.setdefault(
            draft,
            dict.fromkeys(
                ("schemas", "compiled", "refused", "docs", "agree", "wrong", "skipped"), 0
            ),
        )
        counts["schemas"] += 1
        if args.verbose:
            print(name, file=sys.stderr, flush=True)
        try:
            signal.alarm(args.timeout)
            _compile._cache.clear()  # each compilation embeds what it references: keep one
            compiled = compile_schema(schema, registry=registry)
        except SchemaError as exc:
            counts["refused"] += 1
            # Whether jsonschema can judge its documents either (a reference to nothing, say).
            try:
                oracle: Any = jsonschema.validators.validator_for(schema)(schema, registry=registry)
                verdicts = {str(_oracle(oracle, _load(path))) for path, _ in docs}
            except Exception as oracle_exc:
                verdicts = {f"{type(oracle_exc).__name__}"}
            judged = "judges" if verdicts <= {"True", "False"} else "cannot judge"
            refusals.append(
                f"{draft} {name}: [{exc.keyword}] {str(exc)[:160]} (jsonschema {judged} its "
                f"documents: {sorted(v[:60] for v in verdicts)})"
            )
            continue
        except _Timeout:
            counts["refused"] += 1
            refusals.append(f"{draft} {name}: compiling ran past {args.timeout} s")
            continue
        finally:
            signal.alarm(0)
        counts["compiled"] += 1
        validator = jsonschema.validators.validator_for(schema)(schema, registry=registry)
        for path, label in docs:
            try:
                text = json.dumps(_load(path), allow_nan=False)
            except Exception:  # not JSON once loaded (a YAML date, ...), or not loadable
                counts["skipped"] += 1
                continue
            doc = json.loads(text)
            expected = _oracle(validator, doc)
            rng = random.Random(f"{name}/{path.name}")
            if isinstance(expected, str):  # then SchemaStore's label is what there is
                counts["skipped"] += 1
                try:
                    tracked = _tracker(compiled, text, rng)
                except SchemaError:
                    tracked = None
                oracle_errors.append(
                    f"{draft} {name} {path.name}: {expected} (tracker {tracked}, SchemaStore's "
                    f"label {label})"
                )
                continue
            try:
                signal.alarm(args.timeout)
                got: bool | str = _tracker(compiled, text, rng)
            except _Timeout:
                got = f"ran past {args.timeout} s"
            except SchemaError as exc:  # a subschema is compiled when a value first reaches it
                got = f"SchemaError while streaming: [{exc.keyword}] {str(exc)[:160]}"
            finally:
                signal.alarm(0)
            counts["docs"] += 1
            if got == expected:
                counts["agree"] += 1
            else:
                counts["wrong"] += 1
                wrong.append(
                    f"{draft} {name} {path.parent.parent.name}/{path.name}: tracker {got}, "
                    f"jsonschema {expected} (SchemaStore's label: {label})"
                )
    print(f"{'draft':8} {'schemas':>8} {'compiled':>9} {'refused':>8} {'docs':>6} "
          f"{'agree':>6} {'wrong':>6} {'skipped':>8}")  # fmt: skip
    for draft in ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12"):
        c = tally.get(draft)
        if c:
            print(f"{draft:8} {c['schemas']:>8} {c['compiled']:>9} {c['refused']:>8} "
                  f"{c['docs']:>6} {c['agree']:>6} {c['wrong']:>6} {c['skipped']:>8}")  # fmt: skip
    total = {k: sum(c[k] for c in tally.values()) for k in next(iter(tally.values()))}
    print("all     ", " ".join(f"{k}={v}" for k, v in total.items()))
    print(f"\n{len(wrong)} disagreement(s):", *wrong, sep="\n  ")
    print(f"\n{len(refusals)} schema(s) refused:", *refusals, sep="\n  ")
    print(f"\n{len(oracle_errors)} document(s) jsonschema could not judge:", *oracle_errors[:40],
          sep="\n  ")  # fmt: skip


if __name__ == "__main__":
    main()
