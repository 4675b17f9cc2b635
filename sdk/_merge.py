"""The one rule for headers and query parameters given at several levels.

A client's defaults (``default_headers``, ``default_query``, the headers the backend itself
sends), then each :meth:`~sdk.Client.with_options` copy in the order they were made, then the
call's own ``extra_headers`` / ``extra_query``: each level is merged into the one before, key by
key, the later level winning a key both give. Header names compare without regard to case (as
HTTP reads them): ``x-trace`` given at a later level replaces ``X-Trace`` given at an earlier
one, and one header is sent, with the later level's spelling. Query names compare exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["merge_headers", "merge_query"]


def merge_headers(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """``layers`` merged key by key, later ones winning, header names compared case-blind."""
    merged: dict[str, str] = {}
    spelled: dict[str, str] = {}  # lower-cased name -> the spelling kept in ``merged``
    for layer in layers:
        for name, value in (layer or {}).items():
            old = spelled.get(name.lower())
            if old is not None:
                del merged[old]
            spelled[name.lower()] = name
            merged[name] = value
    return merged


def merge_query(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """``layers`` merged key by key, later ones winning."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(layer or {})
    return merged
