"""A keyword's value vetted, cheaply: the checks the dialect translation makes of every value it
reads (:mod:`sdk._schema._dialects`), each raising a :class:`~sdk.SchemaError` that names the
keyword and where it is."""

from __future__ import annotations

import copy as _copy_module
import json
import math
from typing import Any

from sdk._errors import SchemaError
from sdk._schema._nodes import escape

__all__ = ["bad_value", "owned", "vet_count", "vet_json", "vet_number", "vet_strings"]


def vet_json(value: Any, key: str, where: str) -> Any:
    """A copy of ``value``, which must be JSON (what else could a document equal?)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise bad_value(key, where, "made of JSON values") from None


def owned(value: Any) -> Any:
    """A value the canonical form owns (the caller's dict may change after it is compiled)."""
    if not isinstance(value, (list, dict)):
        return value
    try:
        return json.loads(json.dumps(value))  # several times faster than deepcopy
    except (TypeError, ValueError, RecursionError):
        return _copy_module.deepcopy(value)


def bad_value(key: str, where: str, expected: str) -> SchemaError:
    """The error for ``key``'s value (in the subschema at ``where``): it must be ``expected``."""
    return SchemaError(
        f"{key} (at {where or '/'}) must be {expected}",
        keyword=key,
        pointer=f"{where}/{escape(key)}",
    )


def vet_number(value: Any, key: str, where: str) -> int | float:
    """``value``, which must be a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_value(key, where, "a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise bad_value(key, where, "a finite number")
    return value


def vet_count(value: Any, key: str, where: str) -> int:
    """``value``, which must be a non-negative integer (``2.0`` is ``2``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_value(key, where, "a non-negative integer")
    return value


def vet_strings(value: Any, key: str, here: str) -> list[str]:
    """A copy of ``value``, which must be an array of strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(
            f"{key} (at {here}) must be an array of strings", keyword=key, pointer=here
        )
    return list(value)
