"""partial — a lenient, incremental, sans-I/O JSON parser.

Feed it text as it streams in; it tells you, with a path, when each value begins, how a string
grows, when a key is complete, and when a value is final (no later byte can change it). It can
show the partial value at any moment, costs O(n) over a whole stream, and raises a precise error
at the first character no valid JSON can continue from.

>>> import partial
>>> p = partial.Parser()
>>> [type(e).__name__ for e in p.feed('{"name": "Ad')]
['ValueStart', 'Key', 'ValueStart', 'StringDelta']
>>> p.snapshot()
{'name': 'Ad'}
>>> p.feed('a", "age": 3')[-1]
ValueStart(path=('age',), offset=23, kind=<Kind.NUMBER: 'number'>)
>>> p.snapshot()  # 3 may still become 30
{'name': 'Ada'}
>>> for event in p.feed("}"):
...     print(event)
ValueDone(path=('age',), offset=24, value=3)
ValueDone(path=(), offset=24, value={'name': 'Ada', 'age': 3})
>>> p.close()
{'name': 'Ada', 'age': 3}
"""

from __future__ import annotations

from partial._errors import (
    IncompleteJSONError,
    JSONError,
    JSONLimitError,
    JSONRunawayError,
    JSONSyntaxError,
    ParserStateError,
)
from partial._events import (
    Comma,
    Event,
    Key,
    KeyDelta,
    KeyStart,
    Kind,
    Path,
    StringDelta,
    ValueDone,
    ValueStart,
)
from partial._parser import MISSING, Parser

__all__ = [
    "MISSING",
    "Comma",
    "Event",
    "IncompleteJSONError",
    "JSONError",
    "JSONLimitError",
    "JSONRunawayError",
    "JSONSyntaxError",
    "Key",
    "KeyDelta",
    "KeyStart",
    "Kind",
    "Parser",
    "ParserStateError",
    "Path",
    "StringDelta",
    "ValueDone",
    "ValueStart",
]
