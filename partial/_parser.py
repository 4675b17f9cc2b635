"""The incremental JSON parser: one object that owns all parse state.

``feed`` scans only the characters it is given, once, with compiled patterns for the long runs
(string content, whitespace, whole numbers) and explicit states for everything that can be cut
by a chunk boundary (a string, an escape, a ``\\uXXXX``, a number, a literal). Nothing is
recursive: open containers live on an explicit stack, so depth costs memory, not the C stack.
"""

from __future__ import annotations

import codecs
import re
from typing import Any, Final

from partial._errors import (
    IncompleteJSONError,
    JSONError,
    JSONLimitError,
    JSONRunawayError,
    JSONSyntaxError,
    ParserStateError,
)
from partial._events import (
    Event,
    Kind,
    Path,
    new_comma,
    new_key,
    new_key_delta,
    new_key_start,
    new_string_delta,
    new_value_done,
    new_value_start,
)
from partial._scan import (
    ESCAPES,
    HEX,
    LITERALS,
    NUM_ACCEPTING,
    NUM_EXPECTED,
    NUM_START,
    NUM_TRANS,
    NUMBER,
    NUMBER_CHARS,
    ROOT_START,
    STRING_STOP,
    STRING_STOP_LENIENT,
    WHITESPACE,
)

__all__ = ["MISSING", "Parser"]


class _Missing:
    """The type of :data:`MISSING`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "partial.MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()
"""What :meth:`Parser.snapshot` returns while nothing can be shown yet (``None`` is JSON null)."""

# Parser states. The innermost open thing decides the state; containers live on the stack.
_VALUE = 0  # a value must come (root, after ':' or after ',' in an array)
_ARRAY_FIRST = 1  # after '[': a value or ']'
_AFTER = 2  # after a value inside a container: ',' or the closing bracket
_OBJ_FIRST = 3  # after '{': a key or '}'
_OBJ_KEY = 4  # after ',' in an object: a key
_COLON = 5  # after a key: ':'
_STRING = 6  # inside a string (a value or, with _key set, a key)
_ESCAPE = 7  # after a backslash inside a string
_UNICODE = 8  # inside the four hex digits of a \u escape
_NUMBER = 9  # inside a number cut by a chunk boundary
_LITERAL = 10  # inside true/false/null cut by a chunk boundary
_END = 11  # the root value is final
_PREAMBLE = 12  # lenient mode, before the first '{' or '['

_EXPECTED = {
    _VALUE: "a value",
    _ARRAY_FIRST: "a value or ']'",
    _OBJ_FIRST: "'\"' or '}'",
    _OBJ_KEY: "'\"' (an object key)",
    _COLON: "':'",
    _STRING: "'\"' (the end of the string)",
    _ESCAPE: "an escape character",
    _UNICODE: "a hex digit",
    _END: "the end of the input",
    _PREAMBLE: "a JSON object or array",
}

_WS = " \t\n\r"
# Enum member lookups cost a descriptor call each; the hot loop uses these instead.
_K_OBJECT, _K_ARRAY, _K_STRING = Kind.OBJECT, Kind.ARRAY, Kind.STRING
_K_NUMBER, _K_BOOLEAN, _K_NULL = Kind.NUMBER, Kind.BOOLEAN, Kind.NULL
_WS_SEARCH = re.compile(r"[ \t\n\r]").search
_NO_WS = frozenset({_ESCAPE, _UNICODE, _LITERAL, _NUMBER})  # states where whitespace is no gap
_VALUE_START = frozenset('"{[-0123456789tfn')


class _Frame:
    """An open container: its value so far, its path, and (objects) the current key's path."""

    __slots__ = ("is_obj", "key", "key_path", "path", "value")

    def __init__(self, value: Any, path: Path, is_obj: bool) -> None:
        self.value = value
        self.path = path
        self.is_obj = is_obj
        self.key: str = ""
        self.key_path: Path = path


class Parser:
    """A lenient, incremental, sans-I/O JSON parser.

    Feed it text as it arrives; each :meth:`feed` returns the events that the new characters
    made certain, and costs time in proportion to the chunk alone. :meth:`snapshot` shows the
    value so far; :meth:`close` ends the input and returns the value.

    Options:

    * ``lenient`` — skip prose before the first ``{`` or ``[`` (and so a ```` ```json ````
      fence), ignore everything after the root value, and accept raw control characters inside
      strings. Strict (the default) is RFC 8259 exactly, as ``json.loads`` reads it minus
      ``NaN``/``Infinity``.
    * ``max_depth`` — most containers open at once (default 512); more raises
      :class:`~partial.JSONLimitError` at the opening bracket.
    * ``max_bytes`` — most input accepted, in bytes for ``bytes`` input and characters for
      ``str`` input (default ``None``: no bound); the feed that would pass it raises
      :class:`~partial.JSONLimitError` and consumes nothing of its chunk.
    * ``max_gap`` — most whitespace characters in one gap between two tokens, at the root
      (default ``None``: no bound); each open container adds ``gap_per_level`` (default 0), so
      an indented layout's deeper lines fit. A longer run raises
      :class:`~partial.JSONRunawayError` at its first character past the bound (a run cut by
      chunk boundaries counts whole). After the root value the bound is ``max_gap`` itself, for
      each run of whitespace (in lenient mode, each run between the ignored characters too): a
      server that writes blanks after the document is stopped as one that writes them inside.
      Whitespace inside strings and before a lenient document is not counted. The check costs
      nothing outside whitespace.

    * ``detail`` — also report a key's opening quote (:class:`~partial.KeyStart`), a key as it
      grows (:class:`~partial.KeyDelta`) and each comma between members
      (:class:`~partial.Comma`), for a consumer that acts on a member the moment it is certain
      or on a key before it is complete. Off by default; every other event is the same either
      way, and the cost stays O(n).

    Duplicate keys: the last one wins in the value, as with ``json.loads``; each occurrence
    gets its own events.
    """

    __slots__ = (
        "_bad_utf8",
        "_decoder",
        "_delta_from",
        "_detail",
        "_error",
        "_escape_hex",
        "_finished",
        "_gap",
        "_gap_per_level",
        "_gap_run",
        "_high",
        "_key",
        "_lenient",
        "_line",
        "_line_start",
        "_lit",
        "_lit_pos",
        "_max_bytes",
        "_max_depth",
        "_nstate",
        "_num",
        "_offset",
        "_parts",
        "_path",
        "_plain",
        "_root",
        "_size",
        "_snap",
        "_snap_at",
        "_stack",
        "_state",
        "_stop",
        "_text_mode",
    )

    def __init__(
        self,
        *,
        lenient: bool = False,
        max_depth: int = 512,
        max_bytes: int | None = None,
        detail: bool = False,
        max_gap: int | None = None,
        gap_per_level: int = 0,
    ) -> None:
        if max_depth < 1:
            raise ValueError("max_depth must be at least 1")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        if (max_gap is not None and max_gap < 0) or gap_per_level < 0:
            raise ValueError("max_gap and gap_per_level must not be negative")
        self._gap = max_gap
        self._gap_per_level = gap_per_level
        self._gap_run = 0  # whitespace at the end of the last chunk (a run it may continue)
        self._lenient = lenient
        self._detail = detail
        self._max_depth = max_depth
        self._max_bytes = max_bytes
        self._stop = STRING_STOP_LENIENT if lenient else STRING_STOP
        self._state = _PREAMBLE if lenient else _VALUE
        self._stack: list[_Frame] = []
        self._root: Any = MISSING
        self._error: JSONError | None = None
        self._finished = False
        self._offset = 0  # characters consumed before the current chunk
        self._plain = False  # feed() may take its short path (see there)
        self._size = 0  # bytes (or characters) received, for max_bytes
        self._line = 1  # line number at the start of the current chunk
        self._line_start = 0  # offset of the first character of that line
        self._text_mode: bool | None = None  # True: str input, False: bytes input
        self._decoder: codecs.IncrementalDecoder | None = None
        self._bad_utf8: UnicodeDecodeError | None = None
        # the open scalar
        self._path: Path = ()  # path of the open string / number / literal
        self._key = False  # the open string is a key
        self._parts: list[str] = []  # decoded pieces of the open string
        self._delta_from = 0  # parts before this index were already sent as StringDelta
        self._high = ""  # a high surrogate from \uD8xx, held until we know what follows
        self._escape_hex = ""  # hex digits of an unfinished \u escape
        self._num: list[str] = []  # pieces of an unfinished number
        self._nstate = NUM_START
        self._lit = ""  # the literal being read ("true", "false", "null")
        self._lit_pos = 0  # how many of its letters arrived
        self._snap: Any = MISSING
        self._snap_at = -1

    # ------------------------------------------------------------------ public API

    @property
    def offset(self) -> int:
        """Characters consumed so far (after UTF-8 decoding for bytes input)."""
        return self._offset

    @property
    def done(self) -> bool:
        """True once the root value is final."""
        return self._root is not MISSING

    @property
    def depth(self) -> int:
        """How many containers are open."""
        return len(self._stack)

    @property
    def error(self) -> JSONError | None:
        """The error the parser failed with, if any (it then raises it on every call)."""
        return self._error

    def feed(self, chunk: str | bytes) -> list[Event]:
        """Consume the next piece of input and return the events it made certain.

        ``chunk`` is ``str``, or ``bytes`` decoded as UTF-8 incrementally (a character may be
        split across chunks; a UTF-8 byte order mark at the very start is skipped). Do not mix
        the two in one parser. Raises :class:`~partial.JSONSyntaxError` at the first character
        no valid JSON can continue from; the error's ``events`` holds the events of this chunk
        that came before that character. After an error, every call raises it again.
        """
        if self._plain and type(chunk) is str:
            # The common case, kept short: str input, no size bound, not failed or finished.
            if self._state == _STRING and not self._high:
                if self._stop.search(chunk) is None:  # the whole chunk is string content
                    return self._key_chunk(chunk) if self._key else self._string_chunk(chunk)
            text: str = chunk
        else:
            if self._error is not None:
                raise self._error
            if self._finished:
                raise ParserStateError("feed() after close(): the input has ended")
            text = self._decode(chunk)
            self._plain = self._text_mode is True and self._max_bytes is None
        events: list[Event] = []
        try:
            if text:
                self._scan(text, events)
            if self._bad_utf8 is not None:
                if not (self._lenient and self._root is not MISSING):
                    raise self._utf8_error(self._bad_utf8)
                # lenient mode ignores whatever follows the root, undecodable bytes too
                self._bad_utf8 = None
                self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        except JSONError as exc:
            exc.events = events
            self._error = exc
            self._plain = False
            raise
        return events

    def _string_chunk(self, chunk: str) -> list[Event]:
        """A chunk that lies wholly inside an open string value: one delta, nothing else."""
        if not chunk:
            return []
        parts = self._parts
        parts.append(chunk)
        self._delta_from = len(parts)
        start = self._offset
        end = start + len(chunk)
        if self._lenient:  # raw newlines are string content only in lenient mode
            nl = chunk.rfind("\n")
            if nl >= 0:
                self._line += chunk.count("\n")
                self._line_start = start + nl + 1
        self._offset = end
        return [new_string_delta(self._path, end, chunk)]

    def _key_chunk(self, chunk: str) -> list[Event]:
        """A chunk that lies wholly inside an open key: the key grows (one
        :class:`~partial.KeyDelta` with ``detail``), nothing else. What :meth:`_scan` does
        for such a chunk, without its setup: a key cut into tokens sends most of its
        tokens here."""
        if not chunk:
            return []
        parts = self._parts
        parts.append(chunk)
        start = self._offset
        end = start + len(chunk)
        if self._lenient:  # raw newlines are string content only in lenient mode
            nl = chunk.rfind("\n")
            if nl >= 0:
                self._line += chunk.count("\n")
                self._line_start = start + nl + 1
        self._offset = end
        if not self._detail:
            return []
        self._delta_from = len(parts)
        return [new_key_delta(self._stack[-1].path, end, chunk)]

    def finish(self) -> list[Event]:
        """End the input and return its last events (a root number is final only now).

        Raises :class:`~partial.IncompleteJSONError` if the document is not complete. Calling it
        again returns no events.
        """
        if self._error is not None:
            raise self._error
        if self._finished:
            return []
        self._plain = False
        events: list[Event] = []
        if self._decoder is not None:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError as exc:  # the input ended inside a UTF-8 character
                if self._root is MISSING:  # ... and inside the document: it was cut short
                    self._error = self._incomplete()
                    raise self._error from None
                if not self._lenient:  # ... after the document: trailing garbage
                    self._error = self._utf8_error(exc)
                    raise self._error from None
        if self._state == _NUMBER and not self._stack and self._nstate in NUM_ACCEPTING:
            self._state = self._end_number(self._offset, events)
        if self._root is MISSING:
            self._error = self._incomplete()
            raise self._error
        self._finished = True
        self._snap_at = -1
        return events

    def close(self) -> Any:
        """End the input and return the final value, as ``json.loads`` would.

        Raises :class:`~partial.IncompleteJSONError` if the document is not complete.
        """
        self.finish()
        return self._root

    def snapshot(self) -> Any:
        """The value so far, or :data:`MISSING` when nothing can be shown yet.

        Open containers appear with their final members; an open string appears with what has
        arrived, escapes decoded (an unfinished escape or a lone high surrogate that a low one
        may still follow is held back); an open number or literal, and a key whose value has not
        started, are absent. So a snapshot never contradicts the final value except for the tail
        of an open string.

        The open containers are fresh copies; closed values inside them are shared with the
        parser's result, so treat the snapshot as read-only. It costs the sizes of the open
        containers, and nothing when nothing was consumed since the last call. Works after an
        error too (to show what arrived).
        """
        if self._root is not MISSING:
            return self._root
        if self._snap_at == self._offset:
            return self._snap
        child: Any = MISSING
        if self._state in (_STRING, _ESCAPE, _UNICODE) and not self._key:
            child = "".join(self._parts)
        for frame in reversed(self._stack):
            if frame.is_obj:
                copy: Any = dict(frame.value)
                if child is not MISSING:
                    copy[frame.key] = child
            else:
                copy = list(frame.value)
                if child is not MISSING:
                    copy.append(child)
            child = copy
        self._snap = child
        self._snap_at = self._offset
        return child

    def open_paths(self) -> list[Path]:
        """Paths of the values still open, outermost first (the open scalar last)."""
        paths = [frame.path for frame in self._stack]
        if self._state in (_STRING, _ESCAPE, _UNICODE, _NUMBER, _LITERAL) and not self._key:
            paths.append(self._path)
        return paths

    # ------------------------------------------------------------------ input decoding

    def _decode(self, chunk: str | bytes) -> str:
        if isinstance(chunk, str):
            if self._text_mode is False:
                raise ParserStateError("this parser was fed bytes; it cannot take str too")
            self._text_mode = True
            text = chunk
            size = len(chunk)
        elif isinstance(chunk, bytes | bytearray | memoryview):
            if self._text_mode is True:
                raise ParserStateError("this parser was fed str; it cannot take bytes too")
            self._text_mode = False
            if self._decoder is None:
                self._decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
            size = len(chunk)
            text = ""
        else:
            raise ParserStateError(f"feed() takes str or bytes, not {type(chunk).__name__}")
        if self._max_bytes is not None and self._size + size > self._max_bytes:
            line, column = self._position(self._offset)
            self._error = JSONLimitError(
                f"input larger than max_bytes={self._max_bytes}",
                offset=self._offset,
                line=line,
                column=column,
                limit="max_bytes",
                value=self._max_bytes,
            )
            raise self._error
        first = self._size == 0
        self._size += size
        if self._decoder is not None and not isinstance(chunk, str):
            try:
                text = self._decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                self._bad_utf8 = exc
                # the bytes before the bad one are valid: parse them, then fail right there
                text = exc.object[: exc.start].decode("utf-8-sig" if first else "utf-8")
        return text

    def _utf8_error(self, exc: UnicodeDecodeError) -> JSONSyntaxError:
        line, column = self._position(self._offset)
        return JSONSyntaxError(
            f"invalid UTF-8 ({exc.reason})",
            offset=self._offset,
            line=line,
            column=column,
            expected="valid UTF-8",
            found=repr(exc.object[exc.start : exc.end]),
        )

    # ------------------------------------------------------------------ errors

    def _position(self, offset: int, text: str = "", base: int = 0) -> tuple[int, int]:
        """Line and column (1-based) of ``offset``; ``text`` is the current chunk from ``base``."""
        line, line_start = self._line, self._line_start
        if text:
            upto = offset - base
            line += text.count("\n", 0, upto)
            nl = text.rfind("\n", 0, upto)
            if nl >= 0:
                line_start = base + nl + 1
        return line, offset - line_start + 1

    def _syntax(self, text: str, i: int, expected: str) -> JSONSyntaxError:
        base = self._offset
        found = text[i] if i < len(text) else ""
        line, column = self._position(base + i, text, base)
        what = f"{found!r}" if found else "the end of the input"
        return JSONSyntaxError(
            f"expected {expected}, found {what}",
            offset=base + i,
            line=line,
            column=column,
            expected=expected,
            found=found,
        )

    def _incomplete(self) -> IncompleteJSONError:
        state = self._state
        if state == _NUMBER:
            expected = NUM_EXPECTED.get(self._nstate, "the rest of the document")
        elif state == _LITERAL:
            expected = f"{self._lit!r}"
        elif state == _AFTER:
            expected = "'}'" if self._stack[-1].is_obj else "']'"
            expected = f"',' or {expected}"
        else:
            expected = _EXPECTED.get(state, "the rest of the document")
        line, column = self._position(self._offset)
        where = "" if not self._stack else f" ({len(self._stack)} container(s) still open)"
        return IncompleteJSONError(
            f"the input ended inside the document{where}; expected {expected}",
            offset=self._offset,
            line=line,
            column=column,
            expected=expected,
        )

    def _limit(self, text: str, i: int) -> JSONLimitError:
        base = self._offset
        line, column = self._position(base + i, text, base)
        return JSONLimitError(
            f"nesting deeper than max_depth={self._max_depth}",
            offset=base + i,
            line=line,
            column=column,
            limit="max_depth",
            value=self._max_depth,
        )

    def _runaway(self, text: str, end: int, run: int, bound: int, state: int) -> JSONRunawayError:
        """The run of ``run`` whitespace characters ending at ``text[end]`` passed ``bound``."""
        base = self._offset
        start = base + end - run
        at = start + bound  # the first character past the bound (in this chunk: see _scan)
        line, column = self._position(at, text, base)
        stack = self._stack
        path: Path = ()
        if stack:
            top = stack[-1]
            path = top.key_path if top.is_obj and state in (_COLON, _VALUE) else top.path
        after = state == _END
        where = "after the root value" if after else "between two tokens"
        return JSONRunawayError(
            f"more than {bound} whitespace characters {where} (max_gap)",
            offset=at,
            line=line,
            column=column,
            value=bound,
            start=start,
            path=path,
            depth=len(stack),
            after_root=after,
        )

    # ------------------------------------------------------------------ value completion

    def _complete(self, path: Path, value: Any, offset: int, events: list[Event]) -> int:
        """A value is final: emit it, attach it to its container, return the next state."""
        events.append(new_value_done(path, offset, value))
        stack = self._stack
        if not stack:
            self._root = value
            return _END
        frame = stack[-1]
        if frame.is_obj:
            frame.value[frame.key] = value
        else:
            frame.value.append(value)
        return _AFTER

    def _number_value(self, text: str, offset: int) -> Any:
        try:
            if "." in text or "e" in text or "E" in text:
                return float(text)
            return int(text)
        except ValueError:  # more digits than sys.get_int_max_str_digits() allows
            line, column = self._position(offset)
            raise JSONLimitError(
                f"integer with {len(text)} digits is longer than Python converts",
                offset=offset,
                line=line,
                column=column,
                limit="int_max_str_digits",
                value=len(text),
            ) from None

    def _end_number(self, offset: int, events: list[Event]) -> int:
        text = "".join(self._num)
        self._num = []
        return self._complete(self._path, self._number_value(text, offset), offset, events)

    def _flush_key_delta(self, offset: int, events: list[Event]) -> None:
        parts = self._parts
        if self._delta_from < len(parts):
            text = "".join(parts[self._delta_from :])
            if text:
                events.append(new_key_delta(self._stack[-1].path, offset, text))
            self._delta_from = len(parts)

    def _flush_delta(self, offset: int, events: list[Event]) -> None:
        parts = self._parts
        if self._delta_from < len(parts):
            text = "".join(parts[self._delta_from :])
            if text:
                events.append(new_string_delta(self._path, offset, text))
            self._delta_from = len(parts)

    # ------------------------------------------------------------------ the scanner

    def _scan(self, s: str, events: list[Event]) -> None:
        n = len(s)
        i = 0
        base = self._offset
        st = self._state
        stack = self._stack
        append = events.append
        search = self._stop.search
        gap = self._gap
        carry = 0
        if gap is not None:
            carry = self._gap_run
            self._gap_run = 0
        try:
            while i < n:
                # ---------------------------------------------------------- in a string
                if st == _STRING:
                    m = search(s, i)
                    if m is None:
                        if self._high:
                            self._parts.append(self._high)
                            self._high = ""
                        self._parts.append(s[i:])
                        i = n
                        break
                    j = m.start()
                    if j > i:
                        if self._high:
                            self._parts.append(self._high)
                            self._high = ""
                        self._parts.append(s[i:j])
                    c = s[j]
                    if c == '"':
                        if self._high:
                            self._parts.append(self._high)
                            self._high = ""
                        i = j + 1
                        if self._key:
                            frame = stack[-1]
                            if self._detail:
                                self._flush_key_delta(base + j, events)
                            key = "".join(self._parts)
                            frame.key = key
                            frame.key_path = path = (*frame.path, key)
                            append(new_key(path, base + j))
                            st = _COLON
                        else:
                            self._flush_delta(base + j, events)
                            st = self._complete(self._path, "".join(self._parts), base + j, events)
                    elif c == "\\":
                        i = j + 1
                        st = _ESCAPE
                    else:
                        raise self._syntax(s, j, "a string character (escape control characters)")
                    continue

                c = s[i]
                # ---------------------------------------------------------- whitespace
                if c in _WS and st not in _NO_WS:
                    m2 = WHITESPACE.match(s, i)
                    e = m2.end() if m2 is not None else i + 1
                    if gap is not None:
                        run = e - i + carry if i == 0 else e - i
                        if run > gap and st != _PREAMBLE:
                            bound = gap + self._gap_per_level * len(stack)
                            if run > bound:
                                raise self._runaway(s, e, run, bound, st)
                        if e == n:
                            self._gap_run = run
                    i = e
                    continue

                # ---------------------------------------------------------- after a value
                if st == _AFTER:
                    frame = stack[-1]
                    if c == ",":
                        st = _OBJ_KEY if frame.is_obj else _VALUE
                        if self._detail:
                            append(new_comma(frame.path, base + i))
                        i += 1
                    elif c == ("}" if frame.is_obj else "]"):
                        stack.pop()
                        st = self._complete(frame.path, frame.value, base + i, events)
                        i += 1
                    else:
                        raise self._syntax(s, i, "',' or '}'" if frame.is_obj else "',' or ']'")
                    continue

                # ---------------------------------------------------------- a value begins
                if st == _VALUE or st == _ARRAY_FIRST:
                    if c not in _VALUE_START:
                        if c == "]" and st == _ARRAY_FIRST:
                            frame = stack.pop()
                            st = self._complete(frame.path, frame.value, base + i, events)
                            i += 1
                            continue
                        raise self._syntax(s, i, _EXPECTED[st])
                    if stack:
                        top = stack[-1]
                        path = top.key_path if top.is_obj else (*top.path, len(top.value))
                    else:
                        path = ()
                    if c == '"':
                        append(new_value_start(path, base + i, _K_STRING))
                        self._path = path
                        self._key = False
                        self._parts = []
                        self._delta_from = 0
                        st = _STRING
                        i += 1
                    elif c == "{" or c == "[":
                        if len(stack) >= self._max_depth:
                            raise self._limit(s, i)
                        obj = c == "{"
                        append(new_value_start(path, base + i, _K_OBJECT if obj else _K_ARRAY))
                        stack.append(_Frame({} if obj else [], path, obj))
                        st = _OBJ_FIRST if obj else _ARRAY_FIRST
                        i += 1
                    elif c in LITERALS:
                        word, value = LITERALS[c]
                        kind = _K_NULL if value is None else _K_BOOLEAN
                        append(new_value_start(path, base + i, kind))
                        end = i + len(word)
                        if s.startswith(word, i):
                            st = self._complete(path, value, base + end - 1, events)
                            i = end
                        else:
                            self._path = path
                            self._lit = word
                            self._lit_pos = 1
                            st = _LITERAL
                            i += 1
                    else:  # a number
                        append(new_value_start(path, base + i, _K_NUMBER))
                        m3 = NUMBER.match(s, i)
                        if m3 is not None:
                            e = m3.end()
                            if e < n and s[e] not in NUMBER_CHARS:
                                number = self._number_value(s[i:e], base + i)
                                st = self._complete(path, number, base + e, events)
                                i = e
                                continue
                        self._path = path
                        self._num = []
                        self._nstate = NUM_START
                        st = _NUMBER
                    continue

                # ---------------------------------------------------------- object keys
                if st == _OBJ_FIRST or st == _OBJ_KEY:
                    if c == '"':
                        self._key = True
                        self._parts = []
                        self._delta_from = 0
                        if self._detail:
                            append(new_key_start(stack[-1].path, base + i))
                        st = _STRING
                        i += 1
                    elif c == "}" and st == _OBJ_FIRST:
                        frame = stack.pop()
                        st = self._complete(frame.path, frame.value, base + i, events)
                        i += 1
                    else:
                        raise self._syntax(s, i, _EXPECTED[st])
                    continue

                if st == _COLON:
                    if c != ":":
                        raise self._syntax(s, i, "':'")
                    st = _VALUE
                    i += 1
                    continue

                # ---------------------------------------------------------- escapes
                if st == _ESCAPE:
                    if c == "u":
                        self._escape_hex = ""
                        st = _UNICODE
                    elif c in ESCAPES:
                        if self._high:
                            self._parts.append(self._high)
                            self._high = ""
                        self._parts.append(ESCAPES[c])
                        st = _STRING
                    else:
                        raise self._syntax(s, i, 'an escape character (one of "\\/bfnrtu)')
                    i += 1
                    continue

                if st == _UNICODE:
                    hexdigits = self._escape_hex
                    while i < n and len(hexdigits) < 4:
                        if s[i] not in HEX:
                            self._escape_hex = hexdigits
                            raise self._syntax(s, i, "a hex digit")
                        hexdigits += s[i]
                        i += 1
                    self._escape_hex = hexdigits
                    if len(hexdigits) == 4:
                        self._unicode_escape(int(hexdigits, 16))
                        st = _STRING
                    continue

                # ---------------------------------------------------------- split tokens
                if st == _NUMBER:
                    trans = NUM_TRANS
                    ns = self._nstate
                    j = i
                    while j < n:
                        nxt = trans[ns].get(s[j])
                        if nxt is None:
                            break
                        ns = nxt
                        j += 1
                    self._nstate = ns
                    if j > i:
                        self._num.append(s[i:j])
                    i = j
                    if j < n:  # the number met a character that cannot continue it
                        if ns not in NUM_ACCEPTING:
                            raise self._syntax(s, j, NUM_EXPECTED[ns])
                        st = self._end_number(base + j, events)
                    continue

                if st == _LITERAL:
                    word = self._lit
                    pos = self._lit_pos
                    while i < n and pos < len(word):
                        if s[i] != word[pos]:
                            self._lit_pos = pos
                            raise self._syntax(s, i, repr(word[pos]) + f" (in {word!r})")
                        pos += 1
                        i += 1
                    self._lit_pos = pos
                    if pos == len(word):
                        value = LITERALS[word[0]][1]
                        st = self._complete(self._path, value, base + i - 1, events)
                    continue

                if st == _END:
                    if self._lenient:
                        # skip to the next whitespace: its runs are bounded as the gaps are
                        m5 = _WS_SEARCH(s, i) if gap is not None else None
                        i = n if m5 is None else m5.start()
                        continue
                    raise self._syntax(s, i, "the end of the input")

                # _PREAMBLE (lenient): skip prose up to the first '{' or '['
                m4 = ROOT_START.search(s, i)
                if m4 is None:
                    i = n
                else:
                    i = m4.start()
                    st = _VALUE
        finally:
            self._state = st
            if st >= _STRING and st <= _UNICODE and self._delta_from < len(self._parts):
                if not self._key:
                    self._flush_delta(base + i, events)
                elif self._detail:
                    self._flush_key_delta(base + i, events)
            nl = s.rfind("\n", 0, i)
            if nl >= 0:
                self._line += s.count("\n", 0, i)
                self._line_start = base + nl + 1
            self._offset = base + i

    def _unicode_escape(self, code: int) -> None:
        """Decode a finished ``\\uXXXX``, pairing surrogates as ``json.loads`` does."""
        parts = self._parts
        if 0xDC00 <= code <= 0xDFFF and self._high:
            high = ord(self._high)
            self._high = ""
            parts.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
            return
        if self._high:
            parts.append(self._high)
            self._high = ""
        if 0xD800 <= code <= 0xDBFF:
            self._high = chr(code)  # held back: a low surrogate may follow
        else:
            parts.append(chr(code))
