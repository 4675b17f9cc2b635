"""The ``fieldstream`` command (also ``python -m sdk``): see :mod:`sdk._cli._main`.

Modules: ``_main`` (arguments, backends, the run), ``_schema_source`` (``--schema`` forms),
``_report`` (JSON Lines output), ``_live`` (the rich live view), ``_exit`` (exit codes),
``_meter`` (token counting while the output streams).
"""

from __future__ import annotations

from sdk._cli._main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
