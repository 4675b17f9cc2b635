"""The exit codes of the ``fieldstream`` command, and which error maps to which.

Scripts may rely on these numbers; they are part of the command's interface:

== ==========================================================================================
0  success: the document was complete and valid; the result was printed
1  the output failed: a schema violation after every retry, truncated (``--max-tokens``),
   refused, content-filtered, not JSON, or an ``on_field`` callback failed
2  usage error: bad arguments, a schema file or module that cannot be found or read, a
   schema that cannot be used, no prompt; a batch whose files cannot be read or written
   (the input cannot be opened, the output cannot be written: a full disk)
3  backend unavailable: the server cannot be reached or answered with an HTTP error, an
   optional extra is missing (``pip install 'fieldstream[local]'``), the model cannot be loaded
130 interrupted (Ctrl-C)
143 terminated (SIGTERM); as for Ctrl-C, the run's last line says so (an ``error`` event, or
    the batch's summary with ``"stopped"``) and a batch keeps what it wrote
== ==========================================================================================
"""

from __future__ import annotations

from enum import IntEnum

from sdk._cli._signals import Terminated
from sdk._errors import (
    BackendError,
    RetriesExhausted,
    SchemaError,
    StreamError,
    StreamUsageError,
    TransportError,
)

__all__ = ["ExitCode", "exit_code_for"]


class ExitCode(IntEnum):
    """What the command's exit status means (see the module docstring)."""

    OK = 0
    OUTPUT_FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3
    INTERRUPTED = 130
    TERMINATED = 143


def exit_code_for(error: BaseException) -> ExitCode:
    """The exit code for the error a run ended with (1 for an error of no known kind)."""
    if isinstance(error, RetriesExhausted) and error.errors:
        # Every attempt failed: the last one says why (a server that went away is not an
        # output failure, even after retries).
        return exit_code_for(error.errors[-1])
    if isinstance(error, TransportError | BackendError):
        return ExitCode.UNAVAILABLE
    if isinstance(error, StreamError):
        return ExitCode.OUTPUT_FAILED
    if isinstance(error, SchemaError | StreamUsageError):
        return ExitCode.USAGE
    if isinstance(error, Terminated):
        return ExitCode.TERMINATED
    if isinstance(error, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    # Anything else is a bug, not a verdict on the output; the command shows its traceback
    # and exits 1, as Python does for any uncaught exception.
    return ExitCode.OUTPUT_FAILED
