"""The schema compiler and the early-check state machine.

Modules, in the order a schema goes through them: ``_compile`` (a pydantic model, a type or a
dict -> :class:`CompiledSchema`; pydantic's final validation), ``_pydantic`` (a pydantic type's
tracker schema, never stricter than pydantic; nested models validated early), ``_dialects``
(each dialect translated into the canonical Draft 2020-12 form; unknown keywords; references
resolved), ``_nodes`` (each sub-schema's keywords compiled when first needed), ``_conj``
(``$ref``/``allOf`` flattened into conjunctions with merged checks), ``_checker`` (the state
machine the tracker drives, with ``_states``, ``_streaming`` and ``_finals`` for its states
and checks), ``_values`` (JSON Schema equality), ``_formats`` (``format`` when asserted),
``_walk`` (events to checker calls), ``_validators`` (jsonschema behind a typed face).
No I/O, no event loop.
"""

from __future__ import annotations

from sdk._schema._compile import CompiledSchema, Formats, Unknown, compile_schema, schema_name

__all__ = ["CompiledSchema", "Formats", "Unknown", "compile_schema", "schema_name"]
