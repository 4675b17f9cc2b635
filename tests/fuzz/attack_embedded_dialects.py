"""The embedded-dialect differential test at any size: prmd-style draft-04 regions under
draft-06, -07, 2019-09 and 2020-12 roots, each document judged by the tracker and by jsonschema
(``validator_for`` the root, which switches validators at a subschema's ``$schema``).

The generator is ``tests/sdk/schema/test_embedded_dialects.py``'s (150 cases in the suite).
Run: ``python tests/fuzz/attack_embedded_dialects.py 2000``; it prints the cases, documents,
documents jsonschema accepts, and each disagreement.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "sdk")]

import test_schema_embedded_dialects as gen  # noqa: E402


def main(cases: int) -> None:
    stats = {"cases": 0, "documents": 0, "accepted by jsonschema": 0, "disagreements": 0}

    @settings(
        max_examples=cases, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(
        root=st.sampled_from(gen.ROOTS),
        maximum=st.integers(0, 10),
        exclusive=st.booleans(),
        required=st.lists(st.sampled_from(["id", "count"]), unique=True),
        docs=st.lists(gen._documents, min_size=1, max_size=6),
    )
    def run(root: str, maximum: int, exclusive: bool, required: list[str], docs: list[Any]) -> None:
        schema = gen._document_schema(root, gen._prmd("app", maximum, exclusive, required), "app")
        stats["cases"] += 1
        for body in docs:
            doc = {"app": body}
            expected = gen._oracle_valid(schema, doc)
            stats["documents"] += 1
            stats["accepted by jsonschema"] += expected
            if gen._tracker_valid(schema, doc) != expected:
                stats["disagreements"] += 1
                print(f"disagreement: root {root}, {doc} (jsonschema: {expected})")

    run()
    print(", ".join(f"{k}: {v}" for k, v in stats.items()))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
