"""The schema compiler and the early-check state machine.

Modules, in the order a schema goes through them: ``_compile`` (a pydantic model, a type or a
dict -> :class:`CompiledSchema`; pydantic's final validation), ``_pydantic`` (a pydantic type's
tracker schema, never stricter than pydantic; nested models validated early; with
``_pydantic_checks``, pydantic's verdict on what the JSON Schema cannot say), ``_dialects``
(each dialect translated into the canonical Draft 2020-12 form; unknown keywords; references
resolved), ``_nodes`` (each sub-schema's keywords compiled when first needed), ``_conj``
(``$ref``/``allOf`` flattened into conjunctions with merged checks), ``_checker`` (the state
machine the tracker drives, with ``_states``, ``_streaming`` and ``_finals`` for its states
and checks), ``_values`` (JSON Schema equality), ``_formats`` (``format`` when asserted),
``_walk`` (events to checker calls), ``_validators`` (jsonschema behind a typed face: the
meta-schema check, and the judge of ``unevaluated*``).
No I/O, no event loop.

Where each keyword is checked (a keyword is read into a node in ``_nodes`` and merged per value
in ``_conj`` first):

- as a string or a key streams: ``maxLength``, ``enum``/``const`` of a string, ``pattern``, a
  format's prefix grammar, ``additionalProperties: false`` on a key -> ``_streaming``;
- at a value's first character: ``type``, ``enum``/``const`` kinds -> ``_checker`` (``_kinds``);
- by counting members: ``maxItems``, ``maxProperties``, ``maxContains``, ``uniqueItems``,
  ``contains``, ``items``/``prefixItems`` and ``properties``/``patternProperties`` routing,
  duplicate keys -> ``_checker`` (with ``_conj``'s ``key_child``/``item_child``);
- when a value is final: bounds, ``multipleOf``, ``minLength``, a pattern's full match,
  ``format``, ``required``, ``minProperties``, ``dependentRequired``, ``minItems``,
  ``minContains``, ``enum``/``const`` of a container -> ``_finals`` (equality and
  ``multipleOf`` in ``_values``);
- when an object or array is final, against its node's whole subschema:
  ``unevaluatedProperties``, ``unevaluatedItems`` -> ``_finals``, judged by jsonschema
  (``_validators.SubschemaJudge``: they depend on every applicator's annotations);
- applicators: ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``dependentSchemas``,
  ``propertyNames`` -> ``_states``; ``$ref``/``allOf`` flattened in ``_conj``;
- each dialect's spelling of them (``dependencies``, array ``items``...) -> ``_dialects``.
"""

from __future__ import annotations

from sdk._schema._compile import CompiledSchema, Formats, Unknown, compile_schema, schema_name

__all__ = ["CompiledSchema", "Formats", "Unknown", "compile_schema", "schema_name"]
