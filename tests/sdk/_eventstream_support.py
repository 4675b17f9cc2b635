"""AWS event-stream frames made by hand (the encoder botocore does not have), for the decoder's
tests and Bedrock's."""

from __future__ import annotations

import struct
import zlib
from typing import Any


def header(name: str, kind: int, value: Any) -> bytes:
    raw = name.encode()
    out = bytes([len(raw)]) + raw + bytes([kind])
    if kind in (0, 1):
        return out
    forms = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
    if kind in forms:
        return out + struct.pack(forms[kind], value)
    if kind in (6, 7):
        data: bytes = value if kind == 6 else value.encode()
        return out + struct.pack(">H", len(data)) + data
    assert kind == 9
    raw_uuid: bytes = value.bytes
    return out + raw_uuid


def frame(headers: bytes, payload: bytes, *, total: int | None = None) -> bytes:
    """One message, its CRCs right (``total`` overrides the length, CRCs made over it)."""
    size = len(headers) + len(payload) + 16 if total is None else total
    prelude = struct.pack(">II", size, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))
