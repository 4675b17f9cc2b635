"""Find the schema a command line names: a JSON Schema file, inline JSON, or a Python object.

:func:`load_schema` accepts, in this order:

- inline JSON: text starting with ``{`` (``'{"type": "object", ...}'``);
- ``MODULE:NAME``: an importable module and an attribute in it (``myapp.models:Person``,
  ``myapp.models:Outer.Inner``); the current directory is importable, as for ``python -m``;
- ``FILE.py:NAME``: the same with a Python file's path before the colon
  (``examples/models.py:Person``);
- ``FILE``: a JSON Schema file (``examples/schemas/person.json``).

The attribute may be a pydantic model class, any type pydantic's ``TypeAdapter`` accepts, or a
JSON Schema ``dict``; whether the tracker can use it is checked later, when the schema is
compiled. Everything that goes wrong here raises :class:`SchemaSourceError` (a ``ValueError``),
with a message that names the file or module and says what was expected.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["SchemaSourceError", "load_schema"]


class SchemaSourceError(ValueError):
    """The schema named on the command line cannot be found or read."""


def load_schema(spec: str) -> Any:
    """The schema ``spec`` names (see the module docstring for the forms accepted)."""
    text = spec.strip()
    if not text:
        raise SchemaSourceError("the schema is empty: give a JSON file or MODULE:NAME")
    if text.startswith("{"):
        return _parse_json(text, "the inline schema")
    location, sep, name = text.rpartition(":")
    # "C:\schemas\person.json" has a colon too: a drive letter is not a module.
    if sep and name and not (len(location) == 1 and name.startswith(("\\", "/"))):
        return _load_object(location, name)
    path = Path(text)
    if path.suffix == ".py":
        raise SchemaSourceError(
            f"{text!r} is a Python file: name the model in it, as {text}:ModelName"
        )
    return _load_json_file(path)


def _parse_json(text: str, where: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaSourceError(
            f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(value, dict | bool):
        raise SchemaSourceError(
            f"{where} must hold a JSON object (a JSON Schema), not {type(value).__name__}"
        )
    return value


def _load_json_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SchemaSourceError(
            f"schema file not found: {str(path)!r} (give a JSON Schema file, or MODULE:NAME "
            "or FILE.py:NAME for a pydantic model)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaSourceError(f"cannot read the schema file {str(path)!r}: {exc}") from None
    return _parse_json(text, f"the schema file {str(path)!r}")


def _load_object(location: str, name: str) -> Any:
    module = _import_file(Path(location)) if _is_file_path(location) else _import(location)
    value: Any = module
    for part in name.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SchemaSourceError(
                f"{location!r} has no attribute {name!r} (expected a pydantic model, a type, or "
                "a JSON Schema dict)"
            ) from None
    if isinstance(value, ModuleType):
        raise SchemaSourceError(f"{location}:{name} is a module, not a model or schema")
    return value


def _is_file_path(location: str) -> bool:
    return location.endswith(".py") or os.sep in location or "/" in location


def _import(module_name: str) -> ModuleType:
    # Like `python -m`, the current directory is importable: `fieldstream` is a console
    # script, whose own sys.path[0] is the scripts directory, not where the user stands.
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise SchemaSourceError(
                f"no module named {module_name!r} (for a file, give its path: path/to/file.py)"
            ) from None
        raise SchemaSourceError(f"importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise SchemaSourceError(f"importing {module_name!r} failed: {exc!r}") from exc
    finally:
        if added:
            sys.path.remove(cwd)


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise SchemaSourceError(f"schema module file not found: {str(path)!r}")
    resolved = path.resolve()
    # A name unique to the file, registered in sys.modules: pydantic resolves forward
    # references through the module, and a second load of the same file reuses it.
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    module_name = f"_fieldstream_schema_{resolved.stem}_{digest}"
    loaded = sys.modules.get(module_name)
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise SchemaSourceError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise SchemaSourceError(f"importing {str(path)!r} failed: {exc!r}") from exc
    return module
