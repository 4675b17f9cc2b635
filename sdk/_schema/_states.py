"""The pieces of the checker's state: why a check failed, one schema on one value, the links
that combine several into ``anyOf``/``oneOf``/``not``/``if``/``dependentSchemas``/
``propertyNames``, and one open value.

A :class:`State` is one conjunction checked on one value. It is *alive* until a byte proves the
value cannot satisfy it; then it dies with a :class:`Reason` and tells every link in ``ups``:
a container's state that requires this member dies too, a group counts its lost branches. A
state still alive when its value closes (and its close-time checks pass) is satisfied. Links are
followed with an explicit work list, never recursion.
"""

from __future__ import annotations

from typing import Any

from sdk._errors import Path
from sdk._schema._conj import Conj

__all__ = [
    "LATER",
    "NO_INSTANCE",
    "UNDECIDED",
    "AnyGroup",
    "ContainsSlot",
    "DepGroup",
    "Frame",
    "IfGroup",
    "NamesGroup",
    "NotGroup",
    "OneGroup",
    "Reason",
    "State",
    "Work",
    "new_state",
    "silence",
]


NO_INSTANCE: Any = object()
"""No model instance stands for this value (see :mod:`sdk._schema._pydantic`)."""

UNDECIDED: Any = object()
"""A field's validators could not judge it alone (``Frame.validated``): its object's
validation will, and its event waits for that."""

LATER: Any = object()
"""A value pydantic could not judge alone outside a model's fields (``Frame.validated``): only
the final validation will, and its event (and every later one) waits for that."""


class Reason:
    """Why a state died: what the violation will say if this is what sinks the document."""

    __slots__ = ("keyword", "message", "offset", "path", "start", "upto", "value")

    def __init__(
        self,
        path: Path,
        keyword: str,
        message: str,
        value: Any,
        offset: int,
        start: int,
        upto: int | None = None,
    ) -> None:
        self.path = path
        self.keyword = keyword
        self.message = message
        self.value = value
        self.offset = offset
        self.start = start
        self.upto = upto
        """For a string refused while it streams: how many of its characters prove it."""

    def at(self, offset: int) -> Reason:
        """The same reason, found certain at ``offset`` (a branch that died earlier, which
        only now sinks its owner)."""
        if offset == self.offset:
            return self
        return Reason(
            self.path, self.keyword, self.message, self.value, offset, self.start, self.upto
        )


Work = list[tuple["State", Reason]]
"""States to kill, with why: the propagation's explicit stack."""


class State:
    """One conjunction checked on one value."""

    __slots__ = ("alive", "cands", "conj", "counts", "groups", "subs", "ups", "why")

    def __init__(self, conj: Conj) -> None:
        self.conj = conj
        self.alive = True
        self.ups: list[Any] = []  # what to tell when this dies: objects with lost()
        self.subs: list[State] = []  # same-value states that exist only for this one
        self.groups: list[Any] = []  # the groups this one owns (resolved at close)
        self.why: Reason | None = None
        self.cands: tuple[str, ...] | None = None  # strings still possible (enum/const)
        self.counts: list[int] | None = None  # per contains: matching items so far

    def lost(self, child: State, why: Reason, work: Work) -> None:
        """A member this state requires died: so does this state."""
        work.append((self, why))


def _combined(branches: list[State], why: Reason) -> Reason:
    """Every branch died: one reason that names them all (those about the same value)."""
    messages: list[str] = []
    for b in branches:
        r = b.why
        if r is not None and r.path == why.path and r.message not in messages:
            messages.append(r.message)
    if len(messages) <= 1:
        return why
    message = "no alternative fits: " + "; or ".join(messages)
    return Reason(why.path, why.keyword, message, why.value, why.offset, why.start)


class AnyGroup:
    """``anyOf``: the owner dies when every branch has."""

    __slots__ = ("branches", "live", "owner")

    def __init__(self, owner: State) -> None:
        self.owner = owner
        self.branches: list[State] = []
        self.live = 0

    def add(self, branch: State) -> None:
        self.branches.append(branch)
        self.live += 1
        branch.ups.append(self)

    def lost(self, child: State, why: Reason, work: Work) -> None:
        self.live -= 1
        if not self.live:
            work.append((self.owner, _combined(self.branches, why)))

    def close(self, frame: Frame, offset: int) -> Reason | None:
        return None


class OneGroup(AnyGroup):
    """``oneOf``: as ``anyOf``, and at close no two branches may hold."""

    __slots__ = ()

    def close(self, frame: Frame, offset: int) -> Reason | None:
        held = [i for i, b in enumerate(self.branches) if b.alive]
        if len(held) > 1:
            message = f"valid against more than one oneOf branch ({held[0]} and {held[1]})"
            return Reason(frame.path, "oneOf", message, None, offset, frame.start)
        return None


class NotGroup:
    """``not``: the owner dies when the inner schema holds at close."""

    __slots__ = ("inner", "owner")

    def __init__(self, owner: State, inner: State) -> None:
        self.owner = owner
        self.inner = inner
        inner.ups.append(self)

    def lost(self, child: State, why: Reason, work: Work) -> None:
        return None  # the inner schema failed: ``not`` holds

    def close(self, frame: Frame, offset: int) -> Reason | None:
        if self.inner.alive:
            message = "must not be valid against the schema in 'not'"
            return Reason(frame.path, "not", message, None, offset, frame.start)
        return None


class IfGroup:
    """``if``/``then``/``else``: ``then`` must hold when ``if`` does, ``else`` when it does
    not. Known early when ``if`` has failed and ``else`` too, or ``then`` and ``else`` both."""

    __slots__ = ("cond", "else_", "owner", "then")

    def __init__(self, owner: State, cond: State, then: State | None, else_: State | None):
        self.owner = owner
        self.cond = cond
        self.then = then
        self.else_ = else_
        for s in (cond, then, else_):
            if s is not None:
                s.ups.append(self)

    def lost(self, child: State, why: Reason, work: Work) -> None:
        then, else_ = self.then, self.else_
        if else_ is None or else_.alive:
            return  # while else can hold, so can the owner
        if not self.cond.alive or (then is not None and not then.alive):
            assert else_.why is not None
            work.append((self.owner, else_.why.at(why.offset) if child is self.cond else why))

    def close(self, frame: Frame, offset: int) -> Reason | None:
        branch = self.then if self.cond.alive else self.else_
        if branch is not None and not branch.alive:
            assert branch.why is not None
            return branch.why.at(offset)
        return None


class DepGroup:
    """``dependentSchemas``: the schema must hold when the key is present."""

    __slots__ = ("frame", "key", "owner", "sub")

    def __init__(self, owner: State, frame: Frame, key: str, sub: State) -> None:
        self.owner = owner
        self.frame = frame
        self.key = key
        self.sub = sub
        sub.ups.append(self)

    def lost(self, child: State, why: Reason, work: Work) -> None:
        keys = self.frame.keys
        if keys is not None and self.key in keys:
            work.append((self.owner, why))

    def close(self, frame: Frame, offset: int) -> Reason | None:
        return None


class NamesGroup:
    """``propertyNames``: a key whose string fails the schema kills the object's state. The
    violation's path ends with the key as far as it arrived; its value is that key."""

    __slots__ = ("frame", "owner")

    def __init__(self, owner: State, frame: Frame) -> None:
        self.owner = owner
        self.frame = frame  # the object

    def lost(self, child: State, why: Reason, work: Work) -> None:
        key = "".join(self.frame.key_parts)
        if why.upto is not None:
            key = key[: why.upto]  # as far as it proves the key wrong, whatever the chunks
        message = f"key {key!r} is not allowed: {why.message}"
        path = (*self.frame.path, key)
        reason = Reason(path, "propertyNames", message, key, why.offset, self.frame.key_start)
        work.append((self.owner, reason))


class Frame:
    """One open value (or a key whose value has not started: ``kind is None``), with the states
    checked on it in creation order (a state before the branches it owns)."""

    __slots__ = (
        "checked",
        "checks",
        "contains",
        "count",
        "data",
        "holds",
        "instance",
        "key_checked",
        "key_frame",
        "key_len",
        "key_parts",
        "key_start",
        "keyed",
        "keys",
        "kind",
        "length",
        "members",
        "parts",
        "path",
        "seen",
        "start",
        "states",
        "subs",
        "validated",
        "watch",
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kind: str | None = None
        self.start = -1
        self.states: list[State] = []
        self.members: dict[Conj, State] | None = None  # a member's states by conjunction
        self.count = 0  # members begun (array items, object keys)
        self.length = 0  # code points of a string so far
        self.parts: list[str] | None = None  # a string's text, kept when a check reads it
        self.checked = 0  # length of the text at the last pattern/format check
        self.watch = False  # a string that some state checks while it streams
        self.keys: set[str] | None = None  # an object's keys so far
        self.key_start = -1  # where the key being read began
        self.key_parts: list[str] = []
        self.key_len = 0
        self.keyed = False  # some state judges the key being read while it streams
        self.key_checked = 0  # length of the key at the last additionalProperties check
        self.key_frame: Frame | None = None  # the key being read, as a string (propertyNames)
        # uniqueItems: the equality key of each distinct item so far, and its index
        self.seen: dict[Any, int] | None = None
        self.contains: list[tuple[Any, State]] | None = None  # an element's contains states
        self.subs: dict[str | int, Any] | None = None  # members' stand-ins (pydantic: models)
        self.instance: Any = NO_INSTANCE  # the model instance this value validated to
        # pydantic field checks: (state, model) pairs whose model checks some of this
        # object's fields, and per model the fields so far (what ``info.data`` shows)
        self.checks: list[tuple[State, Any]] | None = None
        self.data: dict[Any, dict[str, Any]] | None = None
        self.holds = False  # its members' events wait until it is validated
        self.validated: Any = NO_INSTANCE  # the value as its field's validators returned it


class ContainsSlot:
    """Links an element's ``contains`` state to the array's state that counts matches (the
    array counts an element when it closes with the state alive)."""

    __slots__ = ("index", "owner")

    def __init__(self, owner: State, index: int) -> None:
        self.owner = owner
        self.index = index


def new_state(frame: Frame, conj: Conj) -> State:
    """A state for ``conj`` on ``frame``'s value, with the branch states it owns (created after
    it, so that closing the frame's states in reverse decides branches before owners)."""
    s = State(conj)
    frame.states.append(s)
    if conj.any_of or conj.one_of or conj.nots or conj.ifs or conj.dep_schemas:
        for branches in conj.any_of:
            group = AnyGroup(s)
            for b in branches:
                group.add(_owned(frame, s, b))
            s.groups.append(group)
        for branches in conj.one_of:
            one = OneGroup(s)
            for b in branches:
                one.add(_owned(frame, s, b))
            s.groups.append(one)
        for inner in conj.nots:
            s.groups.append(NotGroup(s, _owned(frame, s, inner)))
        for cond, then, else_ in conj.ifs:
            c = _owned(frame, s, cond)
            t = None if then is None else _owned(frame, s, then)
            e = None if else_ is None else _owned(frame, s, else_)
            s.groups.append(IfGroup(s, c, t, e))
        for key, sub in conj.dep_schemas:
            s.groups.append(DepGroup(s, frame, key, _owned(frame, s, sub)))
    return s


def _owned(frame: Frame, owner: State, conj: Conj) -> State:
    sub = new_state(frame, conj)
    owner.subs.append(sub)
    return sub


def silence(subs: list[State]) -> None:
    """Mark states dead whose owner died: their fate no longer matters (and their members are
    no longer worth checking)."""
    todo = list(subs)
    while todo:
        s = todo.pop()
        if s.alive:
            s.alive = False
            todo.extend(s.subs)
