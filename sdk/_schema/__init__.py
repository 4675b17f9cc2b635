"""The schema compiler: what the caller passed, made into what the tracker checks.

Modules, in the order a schema goes through them: ``_compile`` (a pydantic model, a type or a
dict -> :class:`CompiledSchema`, and the final validation), ``_nodes`` (each sub-schema's
keywords sorted by when they can be checked), ``_dnf`` (``$ref``/``allOf``/``anyOf``/``oneOf``
expanded into alternatives), ``_checker`` (the early-check state machine the tracker drives),
``_validators`` (jsonschema behind a typed face). No I/O, no event loop.
"""

from __future__ import annotations

from sdk._schema._compile import CompiledSchema, compile_schema, schema_name

__all__ = ["CompiledSchema", "compile_schema", "schema_name"]
