"""The early-check state machine: parser events in, :class:`~sdk.SchemaViolation` out.

:class:`SchemaChecker` follows one document. For every open value it keeps a frame: the
alternatives (:class:`~sdk._schema._dnf.Conj`) the value may still satisfy, each tagged with the
alternative of its container it belongs to. An event that proves an alternative wrong drops it;
a container alternative whose member has no alternative left is dropped in turn; when the root
has none left the document cannot be valid and the violation is raised, at that event. Nothing
is dropped on a guess: each check fires only when no later byte could make the value valid.

Costs: a frame push/pop per value, and per event a loop over the value's live alternatives
(one, without ``anyOf``/``oneOf``). A container's final check covers its own keywords only;
its members were checked when they closed. jsonschema sees a whole subtree only for the rare
keywords that need it (``not``, ``contains``, ``if``, ``oneOf``'s "only one").
"""

from __future__ import annotations

from typing import Any

from sdk._errors import Path, SchemaViolation
from sdk._schema._compile import CompiledSchema
from sdk._schema._dnf import Conj, Forbidden, Group
from sdk._schema._validators import keyword_of

__all__ = ["SchemaChecker"]

_ARTICLE = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


class _Reason:
    """Why an alternative was dropped (kept to word the violation)."""

    __slots__ = ("keyword", "message", "offset", "path", "value")

    def __init__(self, path: Path, keyword: str, message: str, value: Any, offset: int) -> None:
        self.path = path
        self.keyword = keyword
        self.message = message
        self.value = value
        self.offset = offset


class _Frame:
    """One open value (or a key whose value has not started: ``kind is None``)."""

    __slots__ = (
        "alive",
        "alts",
        "cands",
        "counts",
        "groups",
        "kind",
        "length",
        "live",
        "parents",
        "path",
        "recheck",
        "start",
        "watch",
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self.alts: list[Conj] = []
        self.parents: list[int] = []  # per alternative: the container's alternative it serves
        self.alive: list[bool] = []
        self.live = 0
        self.counts: dict[int, int] = {}  # live alternatives per container alternative
        self.groups: dict[int, Group] = {}  # the schemas per container alternative
        self.recheck = False  # some group needs jsonschema on the final value
        self.kind: str | None = None
        self.start = -1
        self.length = 0  # code points of a string so far
        self.cands: list[tuple[str, ...] | None] = []  # per alternative: strings still possible
        self.watch = False  # a string that some alternative restricts

    def add(self, parent: int, group: Group) -> None:
        self.groups[parent] = group
        self.recheck = self.recheck or group.recheck
        conjs = group.conjs
        self.alts.extend(conjs)
        self.parents.extend([parent] * len(conjs))
        self.alive.extend([True] * len(conjs))
        self.counts[parent] = self.counts.get(parent, 0) + len(conjs)
        self.live += len(conjs)


class SchemaChecker:
    """Checks one document against a compiled schema as its parser events arrive.

    Call the methods in the order of the parser's events; each raises
    :class:`~sdk.SchemaViolation` at the first event after which the document can no longer be
    valid. After a violation the checker must not be used again (its owner stops feeding it).
    """

    __slots__ = ("_reasons", "_schema", "_stack")

    def __init__(self, schema: CompiledSchema) -> None:
        self._schema = schema
        self._stack: list[_Frame] = []
        self._reasons: list[_Reason] = []

    @property
    def open_paths(self) -> list[Path]:
        """Paths of the values still open, outermost first; a key whose value has not started
        yet counts as open."""
        return [f.path for f in self._stack]

    # ------------------------------------------------------------------ events

    def value_start(self, path: Path, offset: int, kind: str) -> None:
        """A value began; ``kind`` is its JSON Schema type name (``"number"`` for any number)."""
        stack = self._stack
        if stack and stack[-1].kind is None:  # an object member: its frame came with its key
            frame = stack[-1]
        elif not stack:
            frame = _Frame(path)
            frame.add(0, self._schema.root)
            stack.append(frame)
            if not frame.live:
                self._reasons = []
                self._drop(0, -1, _Reason(path, "false", "no value is allowed", None, offset))
        else:  # an array element
            frame = self._member(path, offset, path[-1], False)
        frame.kind = kind
        frame.start = offset
        self._reasons = []
        fi = len(stack) - 1
        alts, alive = frame.alts, frame.alive
        for ai in range(len(alts)):
            if alive[ai]:
                fail = alts[ai].kind_fail.get(kind)
                if fail is not None:
                    message = f"{fail[1]}, got {_ARTICLE[kind]}"
                    self._drop(fi, ai, _Reason(path, fail[0], message, None, offset))
        if kind == "string":
            frame.cands = [c.str_members for c in alts]
            frame.watch = any(c.watch for c in alts)

    def key(self, path: Path, offset: int) -> None:
        """An object key is complete; ``path`` ends with it."""
        self._member(path, offset, path[-1], True)

    def string_delta(self, path: Path, offset: int, text: str) -> None:
        """A string value grew by ``text``; ``offset`` is just after the text's last character."""
        frame = self._stack[-1]
        pos = frame.length
        frame.length = pos + len(text)
        if not frame.watch:
            return
        self._reasons = []
        fi = len(self._stack) - 1
        alts, alive, cands = frame.alts, frame.alive, frame.cands
        for ai in range(len(alts)):
            if not alive[ai]:
                continue
            conj = alts[ai]
            limit = conj.max_length
            if limit is not None and pos + len(text) > limit:
                bad = max(limit - pos, 0)  # index in ``text`` of the first character too many
                where = offset - len(text) + bad
                message = f"expected at most {limit} characters, got more"
                self._drop(fi, ai, _Reason(path, "maxLength", message, None, where))
                continue
            members = cands[ai]
            if members is None:
                continue
            kept = tuple(m for m in members if m.startswith(text, pos))
            cands[ai] = kept
            if not kept:
                bad = max((_common(m, text, pos) for m in members), default=0)
                where = offset - len(text) + bad
                shown = (
                    repr(members[0])
                    if conj.str_keyword == "const" and members
                    else f"one of {list(conj.str_members or ())!r}"
                )
                message = f"expected {shown}; no such string starts like this"
                self._drop(fi, ai, _Reason(path, conj.str_keyword, message, None, where))

    def value_done(self, path: Path, offset: int, value: Any) -> tuple[int, str]:
        """A value is final. Returns its start offset and kind (for the caller's bookkeeping)."""
        stack = self._stack
        frame = stack[-1]
        fi = len(stack) - 1
        self._reasons = []
        alts, alive = frame.alts, frame.alive
        for ai in range(len(alts)):
            if alive[ai]:
                conj = alts[ai]
                if conj.validators or conj.integer:
                    fail = conj.check_final(value)
                    if fail is not None:
                        keyword, message, rel = fail
                        reason = _Reason(path + rel, keyword, message, value, offset)
                        self._drop(fi, ai, reason)
        if frame.recheck:
            for parent, group in frame.groups.items():
                if group.recheck and frame.counts.get(parent, 0):
                    err = group.first_error(value)
                    if err is not None:
                        reason = _Reason(
                            path + tuple(err.absolute_path),
                            keyword_of(err),
                            err.message,
                            err.instance,
                            offset,
                        )
                        for ai in range(len(alts)):
                            if alive[ai] and frame.parents[ai] == parent:
                                self._drop(fi, ai, reason)
        stack.pop()
        assert frame.kind is not None
        return frame.start, frame.kind

    # ------------------------------------------------------------------ internals

    def _member(self, path: Path, offset: int, slot: str | int, is_key: bool) -> _Frame:
        """Push the frame of a container's member, dropping the container's alternatives that
        forbid any member there."""
        stack = self._stack
        fi = len(stack) - 1
        parent = stack[fi]
        frame = _Frame(path)
        self._reasons = []
        alts, alive = parent.alts, parent.alive
        for ai in range(len(alts)):
            if not alive[ai]:
                continue
            conj = alts[ai]
            found: Group | Forbidden
            if is_key:
                assert isinstance(slot, str)
                found = conj.key_group(slot)
            else:
                assert isinstance(slot, int)
                limit = conj.max_items
                if limit is not None and slot >= limit:
                    message = f"expected at most {limit} items, got more"
                    self._drop(fi, ai, _Reason(path, "maxItems", message, None, offset))
                    continue
                found = conj.item_group(slot)
            if isinstance(found, Forbidden):
                value = slot if is_key else None
                self._drop(fi, ai, _Reason(path, found.keyword, found.message, value, offset))
            else:
                frame.add(ai, found)
        stack.append(frame)
        return frame

    def _drop(self, fi: int, ai: int, reason: _Reason) -> None:
        """Drop alternative ``ai`` of frame ``fi``; a container alternative left with no way
        for this member goes too; the root left with none is a violation."""
        self._reasons.append(reason)
        while True:
            frame = self._stack[fi]
            if ai >= 0:
                if not frame.alive[ai]:
                    return
                frame.alive[ai] = False
                frame.live -= 1
                parent = frame.parents[ai]
                left = frame.counts[parent] - 1
                frame.counts[parent] = left
                if left:
                    return
            else:
                parent = 0
            if fi == 0:
                if frame.live:
                    return
                raise self._violation()
            fi, ai = fi - 1, parent

    def _violation(self) -> SchemaViolation:
        reasons = self._reasons
        last = reasons[-1]
        same = [r for r in reasons if r.path == last.path]
        messages: list[str] = []
        for r in same:
            if r.message not in messages:
                messages.append(r.message)
        message = (
            messages[0] if len(messages) == 1 else "no alternative fits: " + "; or ".join(messages)
        )
        return SchemaViolation(
            message, path=last.path, keyword=last.keyword, value=last.value, offset=last.offset
        )


def _common(member: str, text: str, pos: int) -> int:
    """How many characters of ``text`` match ``member`` from ``pos``."""
    n = 0
    for a, b in zip(member[pos:], text, strict=False):
        if a != b:
            break
        n += 1
    return n
