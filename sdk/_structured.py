"""``stream_structured``: a structured stream over any async source of text deltas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter
from typing_extensions import Unpack

from sdk._constraints import StructuralTag, TextConstraint, Tool
from sdk._options import StreamOptions, split_options
from sdk._stream._source import Source
from sdk._stream._stream import Stream
from sdk._trackers._segments import TaggedText
from sdk._trackers._target import compile_target

__all__ = ["stream_structured"]

T = TypeVar("T")


@overload
def stream_structured(
    source: Source, *, schema: TextConstraint, **options: Unpack[StreamOptions]
) -> Stream[str]: ...
@overload
def stream_structured(
    source: Source, *, schema: StructuralTag, **options: Unpack[StreamOptions]
) -> Stream[TaggedText]: ...
@overload
def stream_structured(
    source: Source, *, schema: type[T], **options: Unpack[StreamOptions]
) -> Stream[T]: ...
@overload
def stream_structured(
    source: Source, *, schema: TypeAdapter[T], **options: Unpack[StreamOptions]
) -> Stream[T]: ...
@overload
def stream_structured(
    source: Source,
    *,
    schema: Any = None,
    tools: Sequence[Tool] | Mapping[str, Any] | None = None,
    **options: Unpack[StreamOptions],
) -> Stream[Any]: ...
def stream_structured(
    source: Source,
    *,
    schema: Any = None,
    tools: Sequence[Tool] | Mapping[str, Any] | None = None,
    **options: Unpack[StreamOptions],
) -> Stream[Any]:
    """Stream a structured document from ``source``; use the result with ``async with``.

    - ``source``: an async iterable of ``str`` / :class:`~sdk.Delta`, or a callable taking an
      :class:`~sdk.Attempt` and returning one (needed for ``retry``).
    - ``schema``: a pydantic model class, a ``TypeAdapter``-able type, a JSON Schema dict, or a
      constraint (:class:`~sdk.Choice`, :class:`~sdk.Regex`, :class:`~sdk.Grammar`,
      :class:`~sdk.StructuralTag`); or, instead, ``tools``: several :class:`~sdk.Tool` (or a
      mapping of names to schemas), each tool call tracked against the tool it names.
    - ``options``: how the stream behaves: ``on_field``, ``retry``, ``on_callback_error``,
      ``max_concurrency``, ``pending_callbacks``, ``lenient``, ``deltas``, ``progress``
      (each is described on :class:`~sdk._options.StreamConfig`).

    Raises ``TypeError``/``ValueError`` at once for bad arguments (an unknown option, an
    invalid pattern, ``retry`` with a source that is not callable) and
    :class:`~sdk.SchemaError` for a schema the tracker cannot use.
    """
    config, _ = split_options(options, where="stream_structured", request=False)
    return Stream(source, compile_target(schema, tools, formats=config.formats), config)
