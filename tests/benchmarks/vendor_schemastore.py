"""Vendor a sample of SchemaStore's schemas with the labelled documents its own repository tests
them on (a script, not a test; its output is ``tests/data/schema-corpus/schemastore-tests/``).

    PYTHONPATH=. .venv/bin/python tests/benchmarks/vendor_schemastore.py \\
        CHECKOUT COMMIT tests/data/schema-corpus

``CHECKOUT`` holds the files of https://github.com/SchemaStore/schemastore at ``COMMIT``
(``src/schemas/json/``, ``src/test/``, ``src/negative_test/``; Apache-2.0). For each schema
``src/schemas/json/<name>.json`` SchemaStore keeps documents that must pass
(``src/test/<name>/``) and often some that must fail (``src/negative_test/<name>/``), as JSON,
YAML or TOML. A schema is taken when:

- it is at most ``MAX_SCHEMA`` bytes and self-contained: the field tracker compiles it with no
  ``registry=`` (a ``$ref`` to another URL is refused, and fieldstream never fetches schemas);
- jsonschema (the schema's own draft, ``format`` as an annotation) confirms each label it keeps,
  and at least one passing document is left.

A document is kept when it is at most ``MAX_DOCUMENT`` bytes written compactly, its value JSON
can hold (YAML is read under YAML 1.2's core schema: ``on:`` is a key, a date a string; TOML by
``tomllib``: a date is left out), and jsonschema confirms its label; at most ``PER_SCHEMA``
passing and ``PER_SCHEMA`` failing documents a schema (the first by file name), so that no one
schema dominates; of the versions of one schema (``VERSION``) only the last by name. Schemas are
taken in name order while they fit in ``MAX_TOTAL`` bytes.

Written: ``schemastore-tests/<name>/schema.json`` byte for byte, and
``schemastore-tests/<name>/<positive|negative>/<file name>.json`` (the value, indented), and
``schemastore-tests/SOURCE`` (the repository, the commit, each file's path there), and
SchemaStore's ``LICENSE`` beside them.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from jsonschema.validators import validator_for

from tests.benchmarks.vendor_documents import _core_loader

MAX_SCHEMA = 24_000
MAX_DOCUMENT = 4_000
PER_SCHEMA = 8
MAX_TOTAL = 2_000_000
VERSION = r"[-_.]?v?\d+(?:\.\d+)*(?:[-.].*)?$"
"""A version at the end of a name (``enonic-xp-application-8.0.0-B5``): one schema a family."""


def load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix == ".toml":
        return tomllib.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return yaml.load(text, Loader=_core_loader())
    raise ValueError(f"not JSON, YAML or TOML: {path.suffix}")


def _documents(folder: Path, validator: Any, passes: bool) -> list[tuple[Path, str]]:
    kept: list[tuple[Path, str]] = []
    if not folder.is_dir():
        return kept
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if len(kept) == PER_SCHEMA:
            break
        try:
            value = load(path)
            json.dumps(value, allow_nan=False)  # a TOML date, a YAML set: not JSON
        except (TypeError, ValueError, UnicodeDecodeError, yaml.YAMLError) as exc:
            print(f"left out {path}: {type(exc).__name__}")
            continue
        if len(json.dumps(value, separators=(",", ":"), ensure_ascii=False)) > MAX_DOCUMENT:
            continue
        try:
            valid = validator.is_valid(value)
        except Exception as exc:
            print(f"left out {path}: jsonschema: {type(exc).__name__}")
            continue
        if valid != passes:
            print(f"left out {path}: jsonschema does not confirm its label")
            continue
        kept.append((path, json.dumps(value, indent=2, ensure_ascii=False) + "\n"))
    return kept


def main() -> None:
    from sdk._errors import SchemaError
    from sdk._schema._compile import compile_schema

    checkout, commit, corpus = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    src = checkout / "src"
    out = corpus / "schemastore-tests"
    sources = [f"https://github.com/SchemaStore/schemastore at {commit}"]
    total = schemas = documents = 0
    newest: dict[str, Path] = {}
    for folder in sorted((src / "test").iterdir()):  # one version of each family: the last
        newest[re.sub(VERSION, "", folder.name)] = folder
    for folder in sorted(newest.values()):
        schema_path = src / "schemas" / "json" / f"{folder.name}.json"
        if not schema_path.is_file() or schema_path.stat().st_size > MAX_SCHEMA:
            continue
        raw = schema_path.read_bytes()
        try:
            schema = json.loads(raw)
            compile_schema(schema)
            validator = validator_for(schema)(schema)
        except (ValueError, SchemaError) as exc:
            print(f"left out schema {folder.name}: {type(exc).__name__}")
            continue
        except Exception as exc:
            print(f"left out schema {folder.name}: {type(exc).__name__}: {exc}"[:200])
            continue
        positive = _documents(folder, validator, True)
        negative = _documents(src / "negative_test" / folder.name, validator, False)
        if not positive:
            continue
        size = len(raw) + sum(len(text) for _, text in positive + negative)
        if total + size > MAX_TOTAL:
            print(f"left out schema {folder.name}: over the total")
            continue
        total += size
        schemas += 1
        target = out / folder.name
        target.mkdir(parents=True, exist_ok=True)
        (target / "schema.json").write_bytes(raw)
        sources.append(f"{folder.name}/schema.json <- {schema_path.relative_to(checkout)}")
        for label, base, kept in (
            ("positive", src / "test", positive),
            ("negative", src / "negative_test", negative),
        ):
            for path, text in kept:
                name = path.relative_to(base / folder.name)
                file = target / label / (str(name).replace("/", "--") + ".json")
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(text, encoding="utf-8")
                sources.append(f"{folder.name}/{label}/{file.name} <- {path.relative_to(checkout)}")
                documents += 1
    (out / "LICENSE").write_bytes((checkout / "LICENSE").read_bytes())
    (out / "SOURCE").write_text("\n".join(sources) + "\n", encoding="utf-8")
    print(f"{schemas} schemas, {documents} documents, {total} bytes written to {out}")


if __name__ == "__main__":
    main()
