"""A function call whose arguments Vertex AI streams in parts (sans-I/O).

With ``toolConfig.functionCallingConfig.streamFunctionCallArguments: true`` (Vertex AI only;
the Gemini API refuses it) a call is not one ``functionCall`` part but several, in consecutive
records::

    {"functionCall": {"name": "city", "willContinue": true}}           the call begins
    {"functionCall": {"partialArgs": [{"jsonPath": "$.name", "stringValue": "Par",
                                       "willContinue": true}], "willContinue": true}}
    {"functionCall": {"partialArgs": [{"jsonPath": "$.name", "stringValue": "is"}],
                      "willContinue": true}}                            $.name is final
    {"functionCall": {"willContinue": true}}                            nothing new
    {"functionCall": {"partialArgs": [{"jsonPath": "$.population", "numberValue": 2100000}],
                      "willContinue": true}}
    {"functionCall": {}}                                               the call ends

Each ``partialArgs`` entry is one value at a JSON path (google-genai's ``PartialArg``: exactly
one of ``stringValue``, ``numberValue``, ``boolValue``, ``nullValue``; a string may come in
pieces, ``willContinue: true`` on every piece but the last). :class:`StreamedCall` writes them
into the arguments' JSON text with the shared :class:`~sdk._http._path_writer.PathWriter`, so
the tracker reads the call as it reads any other: each field is final when its value is (a
string at its last piece, or when the next path arrives; Vertex sends a last empty piece).

How the parts are read (from google-genai's types and Vertex's recorded streams):

- a call begins with a part that has ``willContinue: true`` and a ``name`` (or with a part
  that has ``partialArgs``); it ends with the first part of it whose ``willContinue`` is not
  true (``{}``, or the last ``partialArgs``), or, when no such part comes, with the candidate's
  ``finishReason`` ``STOP``; at another finish reason it stays unfinished (truncated);
- a later part may repeat the call's ``name`` and ``id``; a different one is refused (a new
  call began before this one ended);
- a value-less entry stands for an empty container: ``$.tags[]`` an empty array, ``$.meta``
  an empty object;
- ``nullValue`` is ``null`` or ``"NULL_VALUE"`` (proto3 JSON writes it either way); a number
  is a double, an integral one written as an integer; ``willContinue`` on a value other than
  a string says nothing (such a value comes whole);
- an entry with another ``...Value`` key, two values, a value of the wrong JSON type, a path
  the writer refuses, or ``args`` given besides the parts raise
  :class:`~sdk.PartialArgumentsError` naming the call, the path and what was wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sdk._backend import Delta
from sdk._errors import PartialArgumentsError
from sdk._http._path_writer import PathWriter

__all__ = ["VALUE_KINDS", "StreamedCall"]

VALUE_KINDS: Final = ("stringValue", "numberValue", "boolValue", "nullValue")
"""The value fields of a ``PartialArg`` (its proto's ``oneof delta``), in REST names."""

_NULLS = (None, "NULL_VALUE", 0)  # google.protobuf.NullValue in JSON: null; its enum name, number


class StreamedCall:
    """One call whose arguments arrive in parts: :meth:`read` each of its ``functionCall``
    parts (the first included), :meth:`end` when the candidate ended it."""

    @staticmethod
    def begins(call: Mapping[str, Any]) -> bool:
        """Whether ``call`` (a ``functionCall``, no streamed call open) begins a streamed one."""
        if isinstance(call.get("partialArgs"), list) and call["partialArgs"]:
            return True
        return call.get("willContinue") is True and isinstance(call.get("name"), str)

    @staticmethod
    def is_end_marker(call: Mapping[str, Any]) -> bool:
        """Whether ``call`` carries nothing (``{}``, ``{"willContinue": ...}``): the end of a
        streamed call whose last part said so already."""
        return not any(call.get(key) for key in ("name", "id", "args", "partialArgs"))

    def __init__(self, number: int, first: Mapping[str, Any]) -> None:
        name, call_id = first.get("name"), first.get("id")
        self.number = number
        self.name = name if isinstance(name, str) else None
        self.call_id = call_id if isinstance(call_id, str) else None
        self.ended = False
        label = f"call {number}" + (f" ({self.name})" if self.name else "")
        self.what = f"the arguments of {label}"
        self._writer = PathWriter(self.what)
        self._first = True

    def read(self, call: Mapping[str, Any]) -> list[Delta]:
        """The deltas of one ``functionCall`` part of this call."""
        for key, mine in (("name", self.name), ("id", self.call_id)):
            said = call.get(key)
            if isinstance(said, str) and said and mine is not None and said != mine:
                raise PartialArgumentsError(
                    f"{self.what}: a part with {key} {said!r} came before the call ended "
                    "(its last part said more would follow)"
                )
        if call.get("args"):
            raise PartialArgumentsError(
                f"{self.what}: a part carries whole args besides the streamed partialArgs"
            )
        pieces = [self._writer.begin()] if self._first else []
        entries = call.get("partialArgs")
        if entries is not None:
            if not isinstance(entries, list):
                raise PartialArgumentsError(f"{self.what}: partialArgs is not a list: {entries!r}")
            pieces.extend(self._entry(entry) for entry in entries)
        if call.get("willContinue") is not True:
            pieces.append(self._writer.close())
            self.ended = True
        return self._deltas("".join(pieces))

    def end(self) -> list[Delta]:
        """The candidate ended the call: the rest of its text."""
        if self.ended:
            return []
        self.ended = True
        pieces = ([self._writer.begin()] if self._first else []) + [self._writer.close()]
        return self._deltas("".join(pieces))

    def _deltas(self, text: str) -> list[Delta]:
        if not text:
            return []
        first, self._first = self._first, False
        if first:
            return [
                Delta(
                    text=text,
                    tool_call=self.number,
                    tool_name=self.name,
                    tool_call_id=self.call_id,
                )
            ]
        return [Delta(text=text, tool_call=self.number)]

    def _entry(self, entry: Any) -> str:
        """One ``PartialArg``'s piece of the text."""
        writer = self._writer
        if not isinstance(entry, Mapping):
            raise PartialArgumentsError(
                f"{self.what}: a partialArgs entry is not an object: {entry!r}"
            )
        path = entry.get("jsonPath")
        if not isinstance(path, str):
            raise PartialArgumentsError(
                f"{self.what}: a partialArgs entry without a jsonPath: {dict(entry)!r}"
            )
        unknown = sorted(k for k in entry if k.endswith("Value") and k not in VALUE_KINDS)
        if unknown:
            raise PartialArgumentsError(
                f"{self.what}: at {path}: unknown value kind {', '.join(unknown)} (known: "
                f"{', '.join(VALUE_KINDS)})",
                json_path=path,
            )
        kinds = [
            k for k in VALUE_KINDS if (k in entry if k == "nullValue" else entry.get(k) is not None)
        ]
        if len(kinds) > 1:
            raise PartialArgumentsError(
                f"{self.what}: at {path}: one value is expected, not {' and '.join(kinds)}",
                json_path=path,
            )
        if not kinds:  # a value-less entry: an empty container
            if path.endswith("[]"):
                return writer.empty(path[:-2], array=True)
            return writer.empty(path, array=False)
        kind = kinds[0]
        value = entry[kind]
        if kind == "stringValue":
            if not isinstance(value, str):
                raise self._wrong(path, kind, value)
            return writer.string(path, value, more=entry.get("willContinue") is True)
        if kind == "numberValue":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._wrong(path, kind, value)
            return writer.number(path, value)
        if kind == "boolValue":
            if not isinstance(value, bool):
                raise self._wrong(path, kind, value)
            return writer.literal(path, value)
        if value not in _NULLS or isinstance(value, bool):
            raise self._wrong(path, kind, value)
        return writer.literal(path, None)

    def _wrong(self, path: str, kind: str, value: Any) -> PartialArgumentsError:
        return PartialArgumentsError(
            f"{self.what}: at {path}: {kind} {value!r} is not of its kind's JSON type",
            json_path=path,
        )
