"""The ``fieldstream`` command (also ``python -m sdk``): see :mod:`sdk._cli._main`.

Modules:

- ``_main``: the entry point: one request (its stream, its report, its exit code), or a batch;
- ``_args``: the command line, its checks and the prompt;
- ``_schema_source``: the ``--schema`` forms (a file, inline JSON, ``module:Name``);
- ``_backends``: the backend and request options the command line names;
- ``_report``: what a run reports, and its JSON Lines form;
- ``_live``: the rich live view of one request;
- ``_batch``: ``--input``/``--output``, a file of requests as a batch (resumable);
- ``_progress``: a batch's progress (a rich bar, or JSON Lines);
- ``_signals``: SIGTERM ends a run as Ctrl-C does;
- ``_exit``: the exit codes, and which error maps to which.

The command reads everything it shows from the stream: field events, progress events
(attempts failed and retried) and ``stream.usage``.
"""

from __future__ import annotations

from sdk._cli._main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
