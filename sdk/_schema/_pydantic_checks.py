"""pydantic's own verdict on one value, before its event: :class:`TypeCheck`, and pydantic's
errors told as places in the document (:func:`pydantic_reason`).

A pydantic type's JSON Schema cannot say everything pydantic checks. Where it says less, the
tracker's schema (:mod:`sdk._schema._pydantic`) marks the spot with a :class:`TypeCheck`: the
core schema of that spot, validated by pydantic (``validate_json`` on the value's JSON text, so
exactly what the final validation does there) when the value is final, before its event.

Two kinds of spot:

- **Context-free constraints**, marked wherever they are (a model's field too): a ``pattern``
  (pydantic-core reads it with its own engine, which can differ from ECMA-262), a strict
  ``int`` (JSON Schema's ``integer`` takes ``1.0``), ``bytes`` (bounds count UTF-8 bytes, not
  characters), a ``float`` ``multiple_of`` (pydantic allows a rounding error), a set's bounds
  (pydantic counts distinct items), and the lax forms of ``int``/``float``/``bool``/number enums
  (a string or a boolean read as a number, a float given for an ``int``: judged only for those
  kinds, so an ordinary number costs nothing).
- **Validators and the types the schema cannot judge** (dates, decimals, URLs, UUIDs,
  transformed strings) **outside a model's fields**: in a root that is not a model
  (``list[Annotated[str, AfterValidator(f)]]``, an ``Annotated`` scalar), in a ``RootModel``, in
  a ``TypedDict`` or dataclass that is not inside a model's field. Inside a model's field,
  :class:`~sdk._schema._pydantic.FieldCheck` runs them with the model's context (``info.data``).
  A container so marked holds its members' events until it passed (:attr:`TypeCheck.holds`).

:class:`MarkingJsonSchema` places the marks while pydantic's generator writes the schema, and
leaves out the keywords pydantic reads more leniently (a set's ``uniqueItems``/``maxItems``,
``bytes`` character bounds; a float's ``multipleOf`` is left out by the tracker's generator).

A validator nested in another validated value can run once per level (pydantic itself runs a
union's validators more than once): validators are expected to be pure, as pydantic expects.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import SchemaValidator, core_schema

from sdk._errors import Path
from sdk._schema._nodes import MODEL_KEY

__all__ = [
    "FUNCTIONS",
    "LATER_VERDICT",
    "PASSED",
    "MarkingJsonSchema",
    "TypeCheck",
    "document_path",
    "is_model",
    "pydantic_reason",
    "value_at",
    "with_marker",
]

FUNCTIONS = frozenset({"function-before", "function-after", "function-wrap", "function-plain"})
"""The core schema types of a validator function."""

PASSED: Any = None
""":meth:`TypeCheck.judge`'s answer when pydantic accepts the value."""

LATER_VERDICT: Any = object()
""":meth:`TypeCheck.judge`'s answer when pydantic cannot judge the value alone (a validator
raised something pydantic does not turn into an error, e.g. it read ``info.data``): the final
validation judges, and the event waits for it."""


class TypeCheck:
    """pydantic's validation of the values at one spot of a type's schema (see the module)."""

    __slots__ = ("_config", "_definitions", "_schema", "_validator", "holds", "kinds")

    fields: dict[str, Any] = {}  # noqa: RUF012 (read-only: what a model's checks would list)
    """No fields of its own (a :class:`~sdk._schema._pydantic.ModelInfo` has some)."""

    def __init__(
        self,
        schema: Any,
        config: core_schema.CoreConfig | None,
        definitions: list[Any],
        *,
        holds: bool = False,
        kinds: tuple[type, ...] | None = None,
    ) -> None:
        self._schema = schema
        self._config = config
        self._definitions = definitions  # the type's core definitions (filled as they are met)
        self._validator: SchemaValidator | None = None
        self.holds = holds
        """Whether the members of a container here wait for its verdict (a validator may refuse
        the whole)."""
        self.kinds = kinds
        """Judge only values of these Python types (``None``: every value). A lax ``int``'s
        check runs for a string or a boolean; a number was judged by the JSON Schema."""

    def applies(self, value: Any) -> bool:
        """Whether ``value`` needs this check."""
        kinds = self.kinds
        return kinds is None or isinstance(value, kinds)

    def judge(self, value: Any) -> Any:
        """:data:`PASSED`, pydantic's errors (a list; ``loc`` relative to the value), or
        :data:`LATER_VERDICT`."""
        validator = self._validator
        try:
            if validator is None:
                validator = self._validator = self._build()
            validator.validate_json(json.dumps(value, ensure_ascii=False))
        except pydantic.ValidationError as exc:
            return list(exc.errors(include_url=False))
        except Exception:  # the user's validator cannot judge alone; the final validation will
            return LATER_VERDICT
        return PASSED

    def _build(self) -> SchemaValidator:
        schema = self._schema
        if self._definitions and _refers(schema):
            schema = core_schema.definitions_schema(schema, list(self._definitions))
        return SchemaValidator(schema, self._config)


def _refers(schema: Any) -> bool:
    """Whether a core schema holds a ``definition-ref`` (an explicit stack)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "definition-ref":
                return True
            stack.extend(v for k, v in node.items() if k not in ("metadata", "serialization"))
        elif isinstance(node, list):
            stack.extend(node)
    return False


def document_path(loc: Any, value: Any, kind: str = "") -> tuple[Path, bool]:
    """pydantic's error location ``loc``, relative to ``value``, as a path into the document,
    and whether it held a label that is no place in the document (a union branch's label such
    as ``"function-after[small(), int]"``, a tagged union's tag, ``"[key]"``): such steps are
    left out. A step is a place when it names a member of the value there; the last step of a
    ``missing`` error names the key that is missing."""
    out: list[str | int] = []
    labelled = False
    current = value
    last = len(loc) - 1
    for i, step in enumerate(loc):
        if type(current) is dict and isinstance(step, str) and step in current:
            out.append(step)
            current = current[step]
        elif type(current) is list and type(step) is int and 0 <= step < len(current):
            out.append(step)
            current = current[step]
        elif i == last and kind == "missing":
            out.append(step)
        else:
            labelled = True
    return tuple(out), labelled


def pydantic_reason(errors: list[Any], value: Any, base: Path) -> tuple[Path, str, str, Any]:
    """``(path, keyword, message, input)`` for pydantic's ``errors`` on ``value`` (at ``base``
    in the document). Errors from a union's branches about the same place are told together
    ("no alternative fits: ...; or ..."; keyword ``anyOf``), at the document's path."""
    first = errors[0]
    kind = str(first.get("type", ""))
    rel, labelled = document_path(first.get("loc", ()), value, kind)
    path = (*base, *rel)
    message = str(first.get("msg", ""))
    if labelled:
        messages: list[str] = []
        for e in errors:
            where, _ = document_path(e.get("loc", ()), value, str(e.get("type", "")))
            msg = str(e.get("msg", ""))
            if where == rel and msg not in messages:
                messages.append(msg)
        if len(messages) > 1:
            return (
                path,
                "anyOf",
                "no alternative fits: " + "; or ".join(messages),
                value_at(value, rel),
            )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return path, kind, f"{message}{more}", first.get("input")


def value_at(value: Any, rel: Path) -> Any:
    """The member of ``value`` at ``rel`` (a path :func:`document_path` returned)."""
    for step in rel:
        if type(value) is dict and isinstance(step, str) and step in value:
            value = value[step]
        elif type(value) is list and type(step) is int and 0 <= step < len(value):
            value = value[step]
        else:
            return None
    return value


class MarkingJsonSchema(GenerateJsonSchema):
    """A JSON Schema generator that marks the spots pydantic must judge itself (see the
    module): the base of :class:`~sdk._schema._pydantic.TrackerJsonSchema`, which pushes onto
    ``_fielded`` as it enters each model."""

    models: list[Any]  # set on a subclass per schema (the models and marks, by marker index)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Per model being generated, innermost last: whether its fields are judged by
        # FieldCheck (a BaseModel's fields) or not (a RootModel's root). Empty: the root type.
        self._fielded: list[bool] = []
        self._core_defs: list[Any] = []  # the core definitions, shared by every TypeCheck

    def _free(self) -> bool:
        """Whether no FieldCheck covers this spot (not inside a BaseModel's fields)."""
        return not self._fielded or not self._fielded[-1]

    def _mark(
        self,
        result: Any,
        schema: Any,
        *,
        holds: bool = False,
        kinds: tuple[type, ...] | None = None,
    ) -> Any:
        """``result`` marked: pydantic judges its values by ``schema`` (a
        :class:`~sdk._schema._pydantic_checks.TypeCheck`)."""
        if not isinstance(result, dict):
            return result
        config = self._config.core_config(None)
        check = TypeCheck(schema, config, self._core_defs, holds=holds, kinds=kinds)
        self.models.append(check)
        return with_marker(result, len(self.models) - 1)

    def generate(self, schema: Any, mode: Any = "validation") -> Any:
        if isinstance(schema, dict) and schema.get("type") == "definitions":
            self._core_defs.extend(schema["definitions"])
        return super().generate(schema, mode)

    def definitions_schema(self, schema: core_schema.DefinitionsSchema) -> Any:
        known = {id(d) for d in self._core_defs}
        self._core_defs.extend(d for d in schema["definitions"] if id(d) not in known)
        return super().definitions_schema(schema)

    def function_after_schema(self, schema: core_schema.AfterValidatorFunctionSchema) -> Any:
        result = super().function_after_schema(schema)
        if self._free() and not self._around_model(schema["schema"]):
            return self._mark(result, schema, holds=True)
        return result

    def _around_model(self, inner: Any) -> bool:
        """Whether a validator wraps a model (the model's own validator: its check runs it)."""
        if not isinstance(inner, dict):
            return False
        by_ref = {d["ref"]: d for d in self._core_defs if isinstance(d, dict) and "ref" in d}
        return is_model(inner, by_ref)

    def _opaque(self, schema: Any) -> Any:
        """A validator that may take anything: ``{}``, judged by pydantic outside a model's
        fields (inside one, its FieldCheck does; around a model, the model's check does)."""
        if self._free() and not self._around_model(schema.get("schema")):
            return self._mark({}, schema, holds=True)
        return {}

    def bytes_schema(self, schema: core_schema.BytesSchema) -> Any:
        # pydantic bounds the bytes (UTF-8, or decoded base64), not the characters.
        result = super().bytes_schema(schema)
        result = {k: v for k, v in result.items() if k not in ("minLength", "maxLength")}
        return self._mark(result, schema)

    def set_schema(self, schema: core_schema.SetSchema) -> Any:
        return self._set(schema, super().set_schema(schema))

    def frozenset_schema(self, schema: core_schema.FrozenSetSchema) -> Any:
        return self._set(schema, super().frozenset_schema(schema))

    def _set(self, schema: Any, result: Any) -> Any:
        """pydantic takes a repeated item in a set (and drops it), and bounds the distinct
        items: no ``uniqueItems``, no ``maxItems`` (``minItems`` stays: distinct items are
        never more than the items); a bounded set is judged by pydantic."""
        if not isinstance(result, dict):
            return result
        result = {k: v for k, v in result.items() if k not in ("uniqueItems", "maxItems")}
        if "min_length" in schema or "max_length" in schema:
            return self._mark(result, schema)
        return result

    def _leaf(self, result: Any, schema: Any) -> Any:
        """A type whose pydantic check the JSON Schema does not make: judged by pydantic
        outside a model's fields (a FieldCheck does inside)."""
        return self._mark(result, schema) if self._free() else result

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> Any:
        return self._leaf(super().decimal_schema(schema), schema)

    def url_schema(self, schema: core_schema.UrlSchema) -> Any:
        return self._leaf(super().url_schema(schema), schema)

    def multi_host_url_schema(self, schema: core_schema.MultiHostUrlSchema) -> Any:
        return self._leaf(super().multi_host_url_schema(schema), schema)

    def uuid_schema(self, schema: core_schema.UuidSchema) -> Any:
        return self._leaf(super().uuid_schema(schema), schema)


def with_marker(result: dict[str, Any], index: int) -> dict[str, Any]:
    """``result`` with the marker of ``models[index]`` (an ``allOf`` around it when it already
    has one: a RootModel's root that is itself marked)."""
    if MODEL_KEY in result:
        return {"allOf": [result], MODEL_KEY: index}
    return {**result, MODEL_KEY: index}


def is_model(node: dict[str, Any], by_ref: dict[str, Any]) -> bool:
    """Whether a core schema is a model, behind its validators and a reference (``by_ref``:
    the definitions by ref)."""
    if node.get("type") == "definition-ref":
        target = by_ref.get(node.get("schema_ref", ""))
        return isinstance(target, dict) and is_model(target, {})
    if node.get("type") in FUNCTIONS:
        inner = node.get("schema")
        return isinstance(inner, dict) and is_model(inner, by_ref)
    return node.get("type") == "model"
