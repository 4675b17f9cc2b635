"""What the local engine's mask does with a JSON Schema: :class:`MaskReport`.

``LocalBackend.explain(schema)`` (``Client.explain``, ``fieldstream --explain``) and
``Stream.mask_report`` give it. It is read off the plan the engine compiles, not worked out
again: the :class:`~sdk._local._mask_schema.Relaxation` each rewrite records where it makes it
(``_mask_schema.mask_schema`` and ``widened``, ``_xgr_schema.xgr_plan``), and the
:class:`~sdk._local._llg_strict.Closure` the strict rewrite records as it closes an object
(``_llg_strict.closures``; both runtimes mask under that rule: on torch xgrammar's own
``strict_mode`` is off).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from sdk._constants import DEFAULT_MASK_COMPILE_BUDGET
from sdk._local._llg_strict import Closure, closures, strict_schema
from sdk._local._mask_budget import build_budget, plan_wait, planned
from sdk._local._mask_schema import Relaxation, pointer, subschemas

__all__ = ["MaskReport", "llg_report", "xgr_report"]


@dataclass(frozen=True, slots=True)
class MaskReport:
    """What the mask of one JSON Schema admits, next to the schema (the tracker enforces the
    schema itself while the text streams, so nothing here lets an invalid result through).

    Paths are JSON pointers into the schema (``/`` the root, ``/properties/a/items``).
    """

    runtime: Literal["llama.cpp", "torch"]
    """The runtime whose grammar engine compiles the mask (llguidance, xgrammar)."""
    relaxations: tuple[Relaxation, ...]
    """Each part of the schema masked wider than it says (or ``format`` read as an
    annotation), with the reason; empty when the mask is the schema exactly."""
    closures: tuple[Closure, ...]
    """Each object schema the strict rule closes to the names it may write (``names``, ``what``
    "closed ..."), or leaves open where closing would contradict the schema (``what`` "left
    open ...", ``names`` empty)."""
    key_order: tuple[tuple[str, tuple[str, ...]], ...]
    """(path, property names): the order the grammar writes each object's properties in."""
    exact: tuple[str, ...]
    """The paths of the subschemas masked exactly as written (no relaxation at them or above
    them that masks them as any value)."""
    refused: str = ""
    """The engine's reason it could not compile the schema as it was ("" when it could)."""

    @property
    def is_exact(self) -> bool:
        """True when nothing is relaxed (closures and key order aside)."""
        return not self.relaxations

    def summary(self) -> str:
        """One line: the runtime, how many parts are relaxed, closed, left open."""
        closed = sum(1 for c in self.closures if c.what.startswith("closed"))
        left_open = len(self.closures) - closed
        relaxed = (
            "masked exactly"
            if self.is_exact
            else f"{len(self.relaxations)} relaxed ("
            + ", ".join(f"{r.path} {r.keyword}" for r in self.relaxations[:3])
            + (", ..." if len(self.relaxations) > 3 else "")
            + ")"
        )
        return (
            f"{self.runtime} mask: {relaxed}; {closed} object(s) closed by the strict rule, "
            f"{left_open} left open"
        )

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON (what ``fieldstream --explain --json`` prints)."""
        return {
            "runtime": self.runtime,
            "exact": list(self.exact),
            "relaxations": [
                {"path": r.path, "keyword": r.keyword, "kind": r.kind, "reason": r.reason}
                for r in self.relaxations
            ],
            "closures": [
                {"path": c.path, "names": list(c.names), "what": c.what} for c in self.closures
            ],
            "key_order": {path: list(names) for path, names in self.key_order},
            "refused": self.refused,
        }

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.refused:
            lines.append(f"  the engine refused the schema as written: {self.refused}")
        lines.extend(f"  {r.kind} {r.path} {r.keyword}: {r.reason}" for r in self.relaxations)
        for c in self.closures:
            listed = ", ".join(c.names)
            lines.append(f"  strict {c.path}: {c.what}" + (f" [{listed}]" if listed else ""))
        lines.extend(f"  key order {path}: {', '.join(keys)}" for path, keys in self.key_order)
        lines.append(f"  exact: {', '.join(self.exact) if self.exact else '(none)'}")
        return "\n".join(lines)


def _walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for step, sub in subschemas(node):
            yield from _walk(sub, path + step)


def _key_order(schema: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (pointer(path), tuple(node["properties"]))
        for path, node in _walk(schema)
        if isinstance(node, dict) and isinstance(node.get("properties"), dict)
        if node["properties"]
    )


def _exact(schema: Any, relaxations: tuple[Relaxation, ...]) -> tuple[str, ...]:
    relaxed = {r.path for r in relaxations}
    anything = [r.path for r in relaxations if r.keyword == "*"]

    def under(path: str) -> bool:
        return any(path == a or a == "/" or path.startswith(a + "/") for a in anything)

    return tuple(
        p
        for p in (pointer(path) for path, node in _walk(schema) if isinstance(node, dict))
        if p not in relaxed and not under(p)
    )


def _pending(runtime: Literal["llama.cpp", "torch"], seconds: float | None) -> MaskReport:
    """The report of a plan not ready within ``seconds`` (the stream's: it never waits
    longer than the mask's budget); ``explain()`` waits for the whole one."""
    why = (
        f"the mask's plan was not ready within the {seconds} s budget: the first generation "
        "may run under the widened mask (the root's type alone) while it is built "
        "(explain() waits for it)"
    )
    return MaskReport(runtime, (Relaxation("/", "*", why, "pending"),), (), (), ())


def llg_report(text: str, json_format: Any, seconds: float | None = None) -> MaskReport:
    """The report of the JSON Schema ``text`` on the llama.cpp runtime (llguidance): read off
    ``_llg_specs.schema_plan``, the plan its compile uses; built within ``seconds`` (None: as
    long as it takes; a small schema's always, ``_mask_budget.plan_wait``), else a report that
    says it is pending (the plan and the report go on, and are kept: ``_mask_budget.planned``)."""
    from sdk._local._llg_specs import plan_within, schema_plan

    def build() -> MaskReport:
        plan = plan_within(text, json_format, None)
        plan = plan if plan is not None else schema_plan(text, json_format)
        return MaskReport(
            runtime="llama.cpp",
            relaxations=plan.relaxations,
            closures=tuple(closures(plan.masked)),
            key_order=_key_order(strict_schema(plan.masked)),
            exact=_exact(json.loads(text), plan.relaxations),
            refused=plan.refused,
        )

    report = planned(("llg report", text, json_format), build, plan_wait(text, seconds))
    return report if report is not None else _pending("llama.cpp", seconds)


def xgr_report(
    text: str,
    budget: float | None = DEFAULT_MASK_COMPILE_BUDGET,
    seconds: float | None = None,
) -> MaskReport:
    """The report of the JSON Schema ``text`` on the torch runtime (xgrammar): read off
    ``_xgr_schema.xgr_plan``, the plan its compile uses (under the compile budget ``budget``);
    built within ``seconds`` (None: as long as it takes), else a report that says it is
    pending, as :func:`llg_report`."""
    from sdk._local._xgr_schema import xgr_plan

    inner = build_budget(budget)

    def build() -> MaskReport:
        plan = planned(("xgr", text, inner), lambda: xgr_plan(text, inner), None)
        plan = plan if plan is not None else xgr_plan(text, inner)
        masked = json.loads(plan.text)
        return MaskReport(
            runtime="torch",
            relaxations=plan.relaxations,
            closures=tuple(closures(masked)),
            key_order=_key_order(strict_schema(masked)),
            exact=_exact(json.loads(text), plan.relaxations),
            refused=plan.refused,
        )

    report = planned(("xgr report", text, inner), build, plan_wait(text, seconds))
    return report if report is not None else _pending("torch", seconds)
