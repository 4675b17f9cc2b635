"""The early-check state machine: parser events in, :class:`~sdk.SchemaViolation` out.

:class:`SchemaChecker` follows one document. Every open value has a frame holding the states
(:mod:`sdk._schema._states`) of the conjunctions it must satisfy: one, for a schema without
``anyOf``/``oneOf``/``not``/``if``; a branch state more per alternative. An event that proves a
state wrong kills it; the death travels up its links (the container's state that requires the
member, the group counting its branches) until something survives or the root state dies, and
then the violation is raised, at that event. Nothing is killed on a guess: each check fires only
when no later byte could make the value valid (the parser's ``detail`` events let a key be
judged while it streams and a comma promise a member).

Costs: a frame per value and, per event, a loop over the value's states. Each (conjunction,
value) pair is checked once: a container's close covers its own keywords (members were checked
when they closed), ``oneOf``/``not``/``if`` are decided from their branch states, and nothing
is validated again by a later level, so the cost is linear in the document for every schema.
The one check that reads a string's whole prefix (``pattern``, a format's prefix grammar) runs
on every delta while the string is short and at geometrically spaced lengths after that.
"""

from __future__ import annotations

from typing import Any

from sdk._errors import Path, SchemaViolation
from sdk._regex._budget import BudgetSpent
from sdk._schema._conj import Conj, Forbidden
from sdk._schema._finals import check_close
from sdk._schema._pydantic import ModelCheck, needs_check, substitute
from sdk._schema._pydantic_checks import TypeCheck, pydantic_reason
from sdk._schema._states import (
    LATER,
    NO_INSTANCE,
    UNDECIDED,
    ContainsSlot,
    DepGroup,
    Frame,
    NamesGroup,
    Reason,
    State,
    Work,
    new_state,
    silence,
)
from sdk._schema._streaming import key_grow, string_begun, string_grow
from sdk._schema._values import Canon

__all__ = ["SchemaChecker"]

_ARTICLE = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


class SchemaChecker:
    """Checks one document against a root conjunction as the parser's events arrive.

    Call the methods in the order of the parser's events (``Parser(detail=True)``); each
    raises :class:`~sdk.SchemaViolation` at the first event after which the document can no
    longer be valid. After a violation the checker must not be used again (its owner stops
    feeding it). ``early_models`` enables pydantic validation of nested models at their close;
    ``field_checks`` runs each model field's own validators when the field is final (before
    its event) and says which values hold their members' events (see :meth:`value_start`).
    """

    __slots__ = ("_canon", "_fields", "_models", "_root", "_root_state", "_stack")

    def __init__(
        self, root: Conj | None, *, early_models: bool = False, field_checks: bool = False
    ) -> None:
        self._root = root
        self._root_state: State | None = None
        self._stack: list[Frame] = []
        self._canon: Canon | None = None
        self._models = early_models
        self._fields = field_checks and early_models

    @property
    def root_judged(self) -> bool:
        """With ``field_checks``: whether pydantic judges the root itself beyond its members
        (a validator or a constraint on a root that is not a model): only the final validation
        does, so the root's events wait for it."""
        frame = self._stack[0] if self._stack else None
        return (
            self._fields
            and frame is not None
            and any(
                s.alive and any(type(m) is TypeCheck for m in s.conj.models) for s in frame.states
            )
        )

    @property
    def open_paths(self) -> list[Path]:
        """Paths of the values still open, outermost first; a key whose value has not started
        yet counts as open."""
        return [f.path for f in self._stack]

    # ------------------------------------------------------------------ events

    def value_start(self, path: Path, offset: int, kind: str) -> bool:
        """A value began; ``kind`` is its JSON Schema type name (``"number"`` for any number).
        True when the events of its members must wait until it is validated (with
        ``field_checks``: an object of a model with a model validator, or a container that is
        a field with validators of its own)."""
        stack = self._stack
        if stack and stack[-1].kind is None:  # an object member: its frame came with its key
            frame = stack[-1]
        elif not stack:
            frame = Frame(path)
            stack.append(frame)
            if self._root is not None and not self._root.trivial:
                self._root_state = new_state(frame, self._root)
        else:  # an array element
            frame = self._item(stack[-1], path, offset)
        frame.kind = kind
        frame.start = offset
        if kind == "object":
            frame.keys = set()
        if not frame.states:
            return False
        self._kinds(frame, kind, offset)
        if self._fields:
            if kind == "object" or kind == "array":
                self._prepare(frame, kind)
            if len(stack) == 1 and self.root_judged:
                frame.holds = True  # its event waits for the final validation
        if kind == "string":
            string_begun(frame)
        elif kind == "array":
            for s in frame.states:
                conj = s.conj
                if conj.unique:
                    frame.seen = {}
                if conj.contains:
                    s.counts = [0] * len(conj.contains)
        return frame.holds

    def key_start(self, offset: int) -> None:
        """A key's opening quote: the object will have one more member."""
        frame = self._stack[-1]
        frame.key_start = offset
        frame.key_parts = []
        frame.key_len = frame.key_checked = 0
        frame.count += 1
        frame.key_frame = None
        frame.keyed = False
        kf: Frame | None = None
        for s in frame.states:
            if not s.alive:
                continue
            conj = s.conj
            frame.keyed = frame.keyed or bool(conj.closed) or conj.has_names
            limit = conj.max_props
            if limit is not None and frame.count > limit:
                message = f"expected at most {limit} properties, got more"
                self._kill(s, Reason(frame.path, "maxProperties", message, None, offset, offset))
                continue
            if conj.closed and not conj.key_prefix_ok(""):
                message = "no key is allowed here"
                reason = Reason(frame.path, "additionalProperties", message, None, offset, offset)
                self._kill(s, reason)
                continue
            if conj.has_names:
                names = conj.names()
                if kf is None:
                    kf = frame.key_frame = Frame(frame.path)
                    kf.kind = "string"
                    kf.start = offset
                    kf.members = {}
                assert kf.members is not None
                ks = kf.members.get(names)
                if ks is None:
                    ks = kf.members[names] = new_state(kf, names)
                ks.ups.append(NamesGroup(s, frame))
        if kf is not None:
            self._kinds(kf, "string", offset)
            string_begun(kf)

    def key_delta(self, offset: int, text: str) -> None:
        """A key grew by ``text``; ``offset`` is just after its last character."""
        frame = self._stack[-1]
        if not frame.keyed:
            return
        for s, reason in key_grow(frame, offset, text):
            self._kill(s, reason)
        kf = frame.key_frame
        if kf is not None:
            for s, reason in string_grow(kf, offset, text):
                self._kill(s, reason)

    def key(self, path: Path, offset: int) -> None:
        """An object key is complete; ``path`` ends with it."""
        frame = self._stack[-1]
        key = path[-1]
        assert isinstance(key, str) and frame.keys is not None
        if key in frame.keys:
            message = f"the key {key!r} appears twice (duplicate keys are refused)"
            raise SchemaViolation(
                message,
                path=path,
                keyword="duplicateKey",
                value=key,
                offset=offset,
                start=frame.key_start,
            )
        frame.keys.add(key)
        kf = frame.key_frame
        if kf is not None:
            frame.key_frame = None
            self._close(kf, offset, key)
        member = Frame(path)
        for s in frame.states:
            if not s.alive:
                continue
            conj = s.conj
            try:
                found = conj.key_child(key)
            except BudgetSpent as exc:  # a patternProperties check ran out of time
                raise exc.at(path, key, offset) from None
            if found is not None:
                if type(found) is Forbidden:
                    reason = Reason(
                        path, found.keyword, found.message, key, offset, frame.key_start
                    )
                    self._kill(s, reason)
                    continue
                assert isinstance(found, Conj)
                self._member(member, s, found)
            if conj.dep_schemas:
                for group in s.groups:
                    if type(group) is DepGroup and group.key == key and not group.sub.alive:
                        assert group.sub.why is not None
                        self._kill(s, group.sub.why.at(offset))
                        break
        self._stack.append(member)

    def comma(self, offset: int) -> None:
        """A comma: the container on top will have one more member."""
        frame = self._stack[-1]
        promised = frame.count + 1
        if frame.kind == "array":
            for s in frame.states:
                if not s.alive:
                    continue
                conj = s.conj
                limit = conj.max_items
                if limit is not None and promised > limit:
                    message = f"expected at most {limit} items, got more"
                    path = (*frame.path, frame.count)
                    self._kill(s, Reason(path, "maxItems", message, None, offset, offset))
                    continue
                for sub, (_, _, most) in zip(conj.contains_conjs(), conj.contains, strict=True):
                    if most is not None and sub.trivial and promised > most:
                        message = f"expected at most {most} items that match 'contains'"
                        reason = Reason(frame.path, "maxContains", message, None, offset, offset)
                        self._kill(s, reason)
                        break
        else:
            for s in frame.states:
                limit = s.conj.max_props
                if s.alive and limit is not None and promised > limit:
                    message = f"expected at most {limit} properties, got more"
                    reason = Reason(frame.path, "maxProperties", message, None, offset, offset)
                    self._kill(s, reason)

    def string_delta(self, path: Path, offset: int, text: str) -> None:
        """A string value grew by ``text``; ``offset`` is just after the text's last character."""
        frame = self._stack[-1]
        if frame.watch:
            for s, reason in string_grow(frame, offset, text):
                self._kill(s, reason)
        else:
            frame.length += len(text)

    def value_done(self, path: Path, offset: int, value: Any) -> tuple[int, str, Any, Any]:
        """A value is final. Returns its start offset and kind (for the caller's bookkeeping),
        the pydantic model instance it validated to when it is a nested model that was
        validated early (else ``None``), and, with ``field_checks``, the value as its field's
        validators returned it when they changed it (else :data:`NO_INSTANCE`;
        :data:`UNDECIDED` when they could not judge it alone)."""
        stack = self._stack
        frame = stack[-1]
        if frame.states:
            self._close(frame, offset, value)
        stack.pop()
        if stack:
            parent = stack[-1]
            if parent.seen is not None or frame.contains is not None:
                self._member_done(parent, frame, offset, value)
            if parent.checks is not None:
                self._check_field(parent, frame, offset, value)
            if self._models:
                substitute(parent, frame, value)
        assert frame.kind is not None
        instance = frame.instance
        return (
            frame.start,
            frame.kind,
            (None if instance is NO_INSTANCE else instance),
            frame.validated,
        )

    # ------------------------------------------------------------------ pydantic fields

    def _prepare(self, frame: Frame, kind: str) -> None:
        """A container began: does it hold its members' events, and which of its states'
        models check its fields one by one."""
        stack = self._stack
        holds = False
        if len(stack) > 1:
            parent = stack[-2]
            if parent.checks is not None:
                key = frame.path[-1]
                holds = any(s.alive and key in info.fields for s, info in parent.checks)
        if kind == "object":
            checks: list[tuple[State, Any]] | None = None
            for s in frame.states:
                if not s.alive:
                    continue
                for info in s.conj.models:
                    holds = holds or info.holds
                    if info.fields:
                        if checks is None:
                            checks = []
                        checks.append((s, info))
            if checks is not None:
                frame.checks = checks
                frame.data = {}
        frame.holds = holds

    def _check_field(self, parent: Frame, member: Frame, offset: int, value: Any) -> None:
        """A member of an object whose model checks fields is final: run its field's
        validators (each model of the object's live states, once), kill the states whose
        model refuses it, and keep what ``info.data`` shows the fields after it."""
        assert parent.checks is not None and parent.data is not None
        key = member.path[-1]
        given = value if member.instance is NO_INSTANCE else member.instance
        for s, info in parent.checks:
            if not s.alive:
                continue
            data = parent.data.get(info)
            if data is None:
                data = parent.data[info] = {}
            check = info.fields.get(key)
            if check is None:
                if isinstance(key, str):
                    data[info.names.get(key, key)] = given
                continue
            validated, errors = check.validate(given, data)
            if errors:
                relative = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in errors]
                path, keyword, message, bad = pydantic_reason(relative, value, member.path)
                self._kill(s, Reason(path, keyword, message, bad, offset, member.start))
                continue
            if validated is NO_INSTANCE:
                data[check.name] = given
                if member.validated is NO_INSTANCE:
                    member.validated = UNDECIDED
                continue
            data[check.name] = validated
            if member.validated is NO_INSTANCE and not (
                validated is given or (type(validated) is type(value) and validated == value)
            ):
                member.validated = validated

    # ------------------------------------------------------------------ states

    def _member(self, member: Frame, parent: State, conj: Conj) -> None:
        """``parent`` requires ``conj`` of the member: share the member's state for it."""
        members = member.members
        if members is None:
            members = member.members = {}
        s = members.get(conj)
        if s is None:
            s = members[conj] = new_state(member, conj)
        s.ups.append(parent)

    def _item(self, parent: Frame, path: Path, offset: int) -> Frame:
        """Push the frame of an array element, checking the array's states for it."""
        index = parent.count
        parent.count = index + 1
        member = Frame(path)
        for s in parent.states:
            if not s.alive:
                continue
            conj = s.conj
            limit = conj.max_items
            if limit is not None and index >= limit:
                message = f"expected at most {limit} items, got more"
                self._kill(s, Reason(path, "maxItems", message, None, offset, offset))
                continue
            found = conj.item_child(index)
            if found is not None:
                if type(found) is Forbidden:
                    reason = Reason(path, found.keyword, found.message, None, offset, offset)
                    self._kill(s, reason)
                    continue
                assert isinstance(found, Conj)
                self._member(member, s, found)
            for i, sub in enumerate(conj.contains_conjs()):
                c = new_state(member, sub)
                if member.contains is None:
                    member.contains = []
                member.contains.append((ContainsSlot(s, i), c))
        self._stack.append(member)
        return member

    def _kill(self, state: State, why: Reason) -> None:
        """Kill ``state`` and whatever cannot survive without it; raise if that is the root."""
        work: Work = [(state, why)]
        root = self._root_state
        while work:
            s, w = work.pop()
            if not s.alive:
                continue
            s.alive = False
            s.why = w
            if s is root:
                raise SchemaViolation(
                    w.message,
                    path=w.path,
                    keyword=w.keyword,
                    value=w.value,
                    offset=w.offset,
                    start=w.start,
                )
            for up in s.ups:
                up.lost(s, w, work)
            if s.subs:
                silence(s.subs)

    # ------------------------------------------------------------------ strings

    def _kinds(self, frame: Frame, kind: str, offset: int) -> None:
        for s in frame.states:
            if s.alive:
                fail = s.conj.kind_fail.get(kind)
                if fail is not None:
                    message = f"{fail[1]}, got {_ARTICLE[kind]}"
                    self._kill(s, Reason(frame.path, fail[0], message, None, offset, offset))

    # ------------------------------------------------------------------ closing

    def _close(self, frame: Frame, offset: int, value: Any) -> None:
        """The value of ``frame`` is final: close-time checks (pydantic's included), then each
        state's groups, branches before their owner."""
        states = frame.states
        models: ModelCheck | None = None
        nested = self._models and self._stack[0] is not frame  # the root is validated at close
        for i in range(len(states) - 1, -1, -1):
            s = states[i]
            if not s.alive:
                continue
            try:
                fail = check_close(s, frame, value, offset, self._canon_for)
            except BudgetSpent as exc:  # a pattern check ran out of time: no verdict
                raise exc.at(frame.path, value, offset) from None
            if (
                fail is None
                and nested
                and s.conj.models
                and needs_check(s.conj.models, value, self._fields)
            ):
                if models is None:
                    models = ModelCheck(frame, value, self._fields)
                fail = models.check(s, offset)
            if fail is not None:
                self._kill(s, fail)
                continue
            for group in s.groups:
                reason = group.close(frame, offset)
                if reason is not None:
                    self._kill(s, reason)
                    break
        if models is not None:
            frame.instance = models.instance()
            if models.later:
                frame.validated = LATER

    def _member_done(self, parent: Frame, member: Frame, offset: int, value: Any) -> None:
        """An element of ``parent`` is final: ``uniqueItems`` and ``contains`` count it."""
        if parent.seen is not None:
            key = self._canon_for().key(value)
            index = parent.count - 1
            first = parent.seen.get(key)
            if first is not None:
                # Indexes, as in the value's path (/hobbies/2): counted from 0, and said so.
                message = (
                    f"expected unique items; the item at index {index} repeats the one at "
                    f"index {first}"
                )
                for s in parent.states:
                    if s.alive and s.conj.unique:
                        reason = Reason(
                            parent.path, "uniqueItems", message, value, offset, member.start
                        )
                        self._kill(s, reason)
            else:
                parent.seen[key] = index
        if member.contains is not None:
            for slot, c in member.contains:
                if c.alive:
                    self._matched(parent, slot, offset)

    def _matched(self, parent: Frame, slot: ContainsSlot, offset: int) -> None:
        s = slot.owner
        if not s.alive or s.counts is None:
            return
        s.counts[slot.index] += 1
        _, _, most = s.conj.contains[slot.index]
        if most is not None and s.counts[slot.index] > most:
            message = f"expected at most {most} items that match 'contains'"
            self._kill(s, Reason(parent.path, "maxContains", message, None, offset, parent.start))

    def _canon_for(self) -> Canon:
        canon = self._canon
        if canon is None:
            canon = self._canon = Canon()
        return canon
