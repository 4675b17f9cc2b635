"""The bare ``partial`` parser: no model, no schema, no event loop.

Feed JSON text in whatever pieces it arrives in; the parser says, with a path, when a value
starts, how a string grows and when each value is final, and shows the partial value at any
moment. Here a document arrives in 8-character chunks::

    python examples/bare_parser.py

Each chunk prints as ``chunk '...'`` followed by the events it caused and the snapshot
(``partial.MISSING`` until something can be shown), then ``final: ...`` with the closed value.
"""

from __future__ import annotations

import json

import partial

DOCUMENT = '{"city": "Lyon", "temps": [11.5, 13, -2], "sunny": true, "note": "caf\\u00e9 \\"ok\\""}'


def main() -> None:
    parser = partial.Parser()
    for start in range(0, len(DOCUMENT), 8):
        chunk = DOCUMENT[start : start + 8]
        print(f"chunk {chunk!r}")
        for event in parser.feed(chunk):
            where = "/" + "/".join(str(p) for p in event.path)
            if isinstance(event, partial.ValueStart):
                print(f"  start  {where} ({event.kind.value})")
            elif isinstance(event, partial.StringDelta):
                print(f"  text   {where} += {event.text!r}")
            elif isinstance(event, partial.Key):
                print(f"  key    {where}")
            elif isinstance(event, partial.ValueDone):
                print(f"  final  {where} = {json.dumps(event.value, ensure_ascii=False)}")
        snapshot = parser.snapshot()
        if snapshot is partial.MISSING:
            print("  snapshot MISSING (nothing to show yet)")
        else:
            print(f"  snapshot {json.dumps(snapshot, ensure_ascii=False)}")
    value = parser.close()
    print("final:", json.dumps(value, ensure_ascii=False))

    # The first character no JSON can continue from raises, with where and what was expected.
    broken = partial.Parser()
    try:
        broken.feed('{"a": [1, 2}')
    except partial.JSONSyntaxError as exc:
        print(f"error: {exc} (offset {exc.offset}, line {exc.line}, column {exc.column})")


if __name__ == "__main__":
    main()
