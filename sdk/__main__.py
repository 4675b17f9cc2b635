"""``python -m sdk``: the ``fieldstream`` command (see :mod:`sdk._cli._main`)."""

from __future__ import annotations

from sdk._cli._main import main

if __name__ == "__main__":
    raise SystemExit(main())
