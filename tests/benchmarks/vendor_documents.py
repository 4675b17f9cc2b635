"""Vendor check-jsonschema's labelled example documents for the schemas of the corpus (a script,
not a test; its output is ``tests/data/schema-corpus/documents/``).

    .venv/bin/python tests/benchmarks/vendor_documents.py CHECKOUT tests/data/schema-corpus

``CHECKOUT`` is a clone of https://github.com/python-jsonschema/check-jsonschema. Its test
suite keeps, for each schema it vendors, real configuration files that must pass
(``tests/example-files/hooks/positive/<schema>/``) and some that must fail
(``.../negative/<schema>/``). Each one whose schema is in ``schemastore/`` is written as JSON to
``documents/<schema>/<positive|negative>/<file name>.json`` (a leading dot written ``dot.``),
its value exactly: YAML is read under
YAML 1.2's core schema, as check-jsonschema reads it (``on:`` is a key, not ``true``; a date is
a string), and a file whose value JSON cannot hold (a YAML-only type) is left out, as is one
whose label jsonschema (under the schema's own draft) does not confirm against the vendored
schema: its reading, or the schema's version, differs from check-jsonschema's.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from jsonschema.validators import validator_for


def _core_loader() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader under YAML 1.2's core schema: only ``true``/``false`` are booleans,
    and nothing is a timestamp."""

    class Core(yaml.SafeLoader):
        pass

    Core.yaml_implicit_resolvers = {
        first: [
            (tag, regexp)
            for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Core.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return Core


def load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    return yaml.load(text, Loader=_core_loader())


def main() -> None:
    checkout, corpus = Path(sys.argv[1]), Path(sys.argv[2])
    schemas = {p.stem for p in (corpus / "schemastore").glob("*.json")}
    out = corpus / "documents"
    written = 0
    for label in ("positive", "negative"):
        for folder in sorted((checkout / "tests" / "example-files" / "hooks" / label).iterdir()):
            if folder.name not in schemas:
                continue
            schema = json.loads((corpus / "schemastore" / f"{folder.name}.json").read_text())
            validator = validator_for(schema)(schema)
            for path in sorted(folder.iterdir()):
                try:
                    value = load(path)
                    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
                except (TypeError, ValueError, yaml.YAMLError) as exc:
                    print(f"left out {path}: {exc}")
                    continue
                if validator.is_valid(value) != (label == "positive"):
                    print(f"left out {path}: jsonschema does not confirm it is {label}")
                    continue
                name = ("dot" if path.name.startswith(".") else "") + path.name + ".json"
                target = out / folder.name / label / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                written += 1
    print(f"{written} documents written to {out}")


if __name__ == "__main__":
    main()
