"""The ``fieldstream`` command (also ``python -m sdk``): see :mod:`sdk._cli._main`.

Modules: ``_main`` (arguments, backends, the run), ``_schema_source`` (``--schema`` forms),
``_report`` (JSON Lines output), ``_live`` (the rich live view), ``_exit`` (exit codes).
The command reads everything it shows from the stream: field events, progress events
(attempts failed and retried) and ``stream.usage``.
"""

from __future__ import annotations

from sdk._cli._main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
