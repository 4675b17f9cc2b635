"""The modules of ``sdk/_local`` import one another in one direction: no circle, not even
through imports made for type checking only (``_backend`` -> ``_tool_calls``, never back)."""

from __future__ import annotations

import ast
from pathlib import Path

LOCAL = Path(__file__).resolve().parents[3] / "sdk" / "_local"


def imports(path: Path) -> set[str]:
    """The ``sdk._local`` modules ``path`` imports, anywhere in it (``TYPE_CHECKING`` blocks
    and function bodies included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {n for n in names if n.startswith("sdk._local.")}
    return found


def test_no_module_of_the_local_engine_imports_one_that_imports_it_back() -> None:
    graph = {f"sdk._local.{f.stem}": imports(f) for f in LOCAL.glob("*.py") if f.stem != "__init__"}
    assert "sdk._local._tool_calls" in graph["sdk._local._backend"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(m for m in graph if reaches(m, m, {m}))
    assert circles == []
