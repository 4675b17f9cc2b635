"""A pydantic type is judged by pydantic: the tracker's schema for it, and nested models
validated the moment their object is final.

pydantic's JSON Schema is what a backend is sent, and it can be stricter than pydantic itself:
lax mode takes ``"5"`` for an ``int``, ``1`` for ``Literal[True]``, a number for a ``datetime``;
a ``BeforeValidator`` may turn anything into the declared type; a name may stand for an alias.
So the tracker checks a pydantic type against a second schema, :func:`tracker_schema`, written by
:class:`TrackerJsonSchema`: the same schema where pydantic is stricter, widened where pydantic
accepts more (lax scalars, Python equality in ``Literal``/``Enum``), ``{}`` (anything) under a
before/wrap/plain validator, and keys left open where aliases or names could be used. ``format``
is never asserted for a pydantic type (pydantic checks its own formats).

Each model's schema is marked (:data:`~sdk._schema._nodes.MODEL_KEY`), and a nested model (not
the root: :meth:`CompiledSchema.validate` runs the root at the end) is validated by pydantic when
its value closes, field and model validators included (:class:`ModelCheck`). To keep that
O(document), a model is validated once, in Python mode with ``strict=False`` (lax, so never
stricter than JSON mode), from its final dict where the members that are models themselves are
replaced by the instances they already validated to (``revalidate_instances`` decides whether
pydantic looks again). A model whose own fields hold something that could see such an instance
differently (a before/wrap/plain validator, a JSON-or-Python type, a callable discriminator) is
validated from its plain JSON instead, exactly as ``validate_json`` would.

Field-level validators (``field_validator`` in any mode, ``Annotated[..., AfterValidator(...)]``
and the other function validators, anywhere in a field's type but inside a nested model), and
pydantic's own checks that the tracker's schema does not make (dates, decimals, URLs, UUIDs,
transformed strings), run when their **field** is final (:class:`FieldCheck`), so that a field's
event goes out only after them. A model with a model validator (:attr:`ModelInfo.holds`) has
its fields' events held until its object closes and the validator passed (the tracker holds
them; see ``sdk._trackers._field``).

Where the JSON Schema cannot say what pydantic checks (a pattern pydantic-core reads its own
way, a strict int, bytes and set bounds, a float's ``multiple_of``, a lax number given as a
string; validators and opaque types outside a model's fields), the generator marks the spot
with a :class:`~sdk._schema._pydantic_checks.TypeCheck` (in the same ``models`` list, by the
same :data:`~sdk._schema._nodes.MODEL_KEY`), and drops the keywords pydantic reads more
leniently (a set's ``uniqueItems``/``maxItems``, ``bytes`` character bounds, a float's
``multipleOf``).
"""

from __future__ import annotations

import json
from typing import Any

import pydantic
from pydantic_core import SchemaValidator, core_schema

from sdk._regex._ecma import no_wider_elsewhere
from sdk._schema._nodes import MODEL_KEY
from sdk._schema._pydantic_checks import (
    FUNCTIONS,
    LATER_VERDICT,
    MarkingJsonSchema,
    TypeCheck,
    is_model,
    pydantic_reason,
    with_marker,
)
from sdk._schema._states import NO_INSTANCE, AnyGroup, Frame, Reason, State

__all__ = [
    "FieldCheck",
    "ModelCheck",
    "ModelInfo",
    "TrackerJsonSchema",
    "needs_check",
    "stand_in_for",
    "substitute",
    "tracker_schema",
]


class ModelInfo:
    """One pydantic model met in a type's schema, and how to validate it early."""

    __slots__ = ("_adapter", "cls", "fields", "holds", "names", "safe")

    def __init__(self, cls: type[Any]) -> None:
        self.cls = cls
        self.safe = True
        """Whether its dict may hold already-validated instances of nested models."""
        self._adapter: pydantic.TypeAdapter[Any] | None = None
        decorators = getattr(cls, "__pydantic_decorators__", None)
        self.holds = decorators is not None and bool(
            decorators.model_validators or decorators.root_validators
        )
        """Whether it has a model validator: its fields' events wait for its validation."""
        self.fields: dict[str, FieldCheck]
        self.names: dict[str, str]
        self.fields, self.names = field_checks(cls)
        """The fields with a field-level validator, by the key that stands for each in JSON
        (``names``: every field's name by its keys, when some field has a check)."""

    def validate(self, raw: Any, stand_in: Any) -> tuple[Any, list[Any] | None]:
        """``(instance, None)``, ``(NO_INSTANCE, errors)``, or ``(NO_INSTANCE, None)`` when
        pydantic cannot tell now (the final validation will)."""
        adapter = self._adapter
        if adapter is None:
            adapter = self._adapter = pydantic.TypeAdapter(self.cls)
        try:
            if self.safe:
                return adapter.validate_python(stand_in, strict=False), None
            return adapter.validate_json(json.dumps(raw, ensure_ascii=False)), None
        except pydantic.ValidationError as exc:
            return NO_INSTANCE, list(exc.errors(include_url=False))
        except (RecursionError, ValueError, TypeError):
            return NO_INSTANCE, None


class FieldCheck:
    """Runs one model field's validators on the field's final value, as pydantic does inside
    the model (``validate_assignment`` on the model's fields: the field validators, the
    ``Annotated`` ones, the field's constraints; never the model validators)."""

    __slots__ = ("_validator", "name")

    def __init__(self, name: str, validator: SchemaValidator) -> None:
        self.name = name
        """The field's name (what ``info.field_name`` says)."""
        self._validator = validator

    def validate(self, value: Any, data: dict[str, Any]) -> tuple[Any, list[Any] | None]:
        """``(validated, None)``, ``(NO_INSTANCE, errors)`` (their ``loc`` starts with the
        field's name), or ``(NO_INSTANCE, None)`` when it cannot tell now (a validator raised
        something pydantic does not turn into an error, e.g. reading ``info.data`` for a field
        that has not arrived: the object's validation will judge). ``data`` is what
        ``info.data`` shows: the object's fields that came before, by name. Lax Python mode,
        never stricter than the final JSON-mode validation."""
        try:
            result = self._validator.validate_assignment(dict(data), self.name, value, strict=False)
        except pydantic.ValidationError as exc:
            return NO_INSTANCE, list(exc.errors(include_url=False))
        except Exception:  # the user's validator cannot judge alone; the final validation will
            return NO_INSTANCE, None
        fields = result[0] if isinstance(result, tuple) else result  # (fields, extra, set)
        return fields[self.name], None


def field_checks(cls: type[Any]) -> tuple[dict[str, FieldCheck], dict[str, str]]:
    """The :class:`FieldCheck` of each field of model ``cls`` that has a validator of its own
        (a function node in its core schema outside nested models), by each key that can stand for
        it in JSON (its alias or validation alias, single-key alias choices, its name when no alias
        or when the model validates by name), and the name of every field by those keys (what
    ``info.data`` is keyed by). Both empty for a model without such fields."""
    top = getattr(cls, "__pydantic_core_schema__", None)
    if not isinstance(top, dict):
        return {}, {}
    definitions: list[Any] = []
    node: Any = top
    if node.get("type") == "definitions":
        definitions = list(node["definitions"])
        node = node["schema"]
    by_ref = {d["ref"]: d for d in definitions if isinstance(d, dict) and "ref" in d}
    seen: set[str] = set()
    while isinstance(node, dict) and node.get("type") != "model":
        ref = node.get("schema_ref")
        if isinstance(ref, str) and ref in by_ref and ref not in seen:
            seen.add(ref)  # a recursive model is a reference to its own definition
            node = by_ref[ref]
        elif "schema" in node:
            node = node["schema"]  # the model validators around the model
        else:
            break
    if not isinstance(node, dict) or node.get("type") != "model" or node.get("root_model"):
        return {}, {}
    config = node.get("config")
    fields_node: Any = node["schema"]
    if not isinstance(fields_node, dict) or fields_node.get("type") != "model-fields":
        return {}, {}  # a before model validator around the fields: the model holds its events
    transforms = isinstance(config, dict) and any(config.get(k) for k in _STR_TRANSFORMS_CONFIG)
    checked = [
        name
        for name, field in fields_node["fields"].items()
        if _has_validator(field["schema"], by_ref, transforms)
    ]
    if not checked:
        return {}, {}
    by_name = bool(
        cls.model_config.get("validate_by_name") or cls.model_config.get("populate_by_name")
    )
    schema = (
        core_schema.definitions_schema(fields_node, definitions) if definitions else fields_node
    )
    try:
        validator = SchemaValidator(schema, config)
    except Exception:
        return {}, {}
    wanted = set(checked)
    out: dict[str, FieldCheck] = {}
    names: dict[str, str] = {}
    for name in fields_node["fields"]:
        check = FieldCheck(name, validator) if name in wanted else None
        alias = fields_node["fields"][name].get("validation_alias")
        keys: list[str] = []
        if alias is None:
            keys.append(name)
        elif isinstance(alias, str):
            keys.append(alias)
        else:
            for choice in alias:
                path = choice if isinstance(choice, list) else [choice]
                if len(path) == 1 and isinstance(path[0], str):
                    keys.append(path[0])
        if by_name:
            keys.append(name)
        for key in keys:
            names.setdefault(key, name)
            if check is not None:
                out.setdefault(key, check)
    return out, names


_FUNCTIONS = FUNCTIONS


_NOT_VALIDATION = frozenset({"metadata", "serialization"})


_OPAQUE = frozenset(
    {"date", "datetime", "time", "timedelta", "decimal", "url", "multi-host-url", "uuid"}
)
"""Types whose pydantic check the tracker's JSON Schema does not make (their ``format`` is
pydantic's to judge; date bounds, decimal digits, URL rules...)."""
_STR_TRANSFORMS = ("strip_whitespace", "to_lower", "to_upper")
_STR_TRANSFORMS_CONFIG = ("str_strip_whitespace", "str_to_lower", "str_to_upper")


def _has_validator(schema: Any, by_ref: dict[str, Any], transforms: bool = False) -> bool:
    """Whether a field's core schema holds something the tracker's checks do not judge as
    pydantic does, outside nested models (their own validation runs them): a validator
    function, a type of :data:`_OPAQUE`, a string pydantic transforms (``transforms``: the
    model's config transforms every string). An explicit stack, definitions followed once."""
    stack = [schema]
    seen: set[str] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind == "model":
            continue
        if kind in _OPAQUE:
            return True
        if kind == "str" and (transforms or any(node.get(k) for k in _STR_TRANSFORMS)):
            return True
        if kind in _FUNCTIONS:
            inner = node.get("schema")
            if not (isinstance(inner, dict) and is_model(inner, by_ref)):
                return True  # (one around a model is that model's own validator)
        if kind == "definition-ref":
            ref = node.get("schema_ref")
            if isinstance(ref, str) and ref not in seen and ref in by_ref:
                seen.add(ref)
                stack.append(by_ref[ref])
            continue
        for key, value in node.items():
            if key not in _NOT_VALIDATION and isinstance(value, (dict, list)):
                stack.append(value)
    return False


class ModelCheck:
    """The pydantic validations of one final value, for each of its states that has models
    or :class:`~sdk._schema._pydantic_checks.TypeCheck` marks: each once (states share the
    verdict), a model from the value with its members' stand-ins, a mark from its JSON."""

    __slots__ = ("_frame", "_instances", "_results", "_stand_in", "_typed", "_value", "later")

    def __init__(self, frame: Frame, value: Any, typed: bool = True) -> None:
        self._frame = frame
        self._value = value
        self._typed = typed  # run the TypeCheck marks (dispatch="validated")
        self._stand_in: Any = NO_INSTANCE
        self._results: dict[Any, tuple[Any, list[Any] | None]] = {}
        self._instances: list[Any] = []
        self.later = False
        """Some mark could not judge the value alone: the final validation will."""

    def check(self, s: State, offset: int) -> Reason | None:
        """Why ``s`` fails by its models' validation (or its marks'), or ``None``."""
        for info in s.conj.models:
            result = self._results.get(info)
            if result is None:
                if type(info) is TypeCheck:
                    if not (self._typed and info.applies(self._value)):
                        continue
                    verdict = info.judge(self._value)
                    if verdict is LATER_VERDICT:
                        self.later = True
                        verdict = None
                    result = self._results[info] = (NO_INSTANCE, verdict)
                else:
                    result = self._results[info] = info.validate(self._value, self._stand())
                    if result[0] is not NO_INSTANCE:
                        self._instances.append(result[0])
            errors = result[1]
            if errors:
                path, keyword, message, value = pydantic_reason(
                    errors, self._value, self._frame.path
                )
                return Reason(path, keyword, message, value, offset, self._frame.start)
        return None

    def instance(self) -> Any:
        """The instance that stands for the value in its container's validation, when it is
        unambiguous (one model validated it, and no live union branch without a model could be
        the one pydantic picks); else :data:`NO_INSTANCE`."""
        if len(self._instances) != 1:
            return NO_INSTANCE
        for s in self._frame.states:
            if (
                s.alive
                and not any(type(m) is ModelInfo for m in s.conj.models)
                and any(isinstance(u, AnyGroup) for u in s.ups)
            ):
                return NO_INSTANCE
        return self._instances[0]

    def _stand(self) -> Any:
        stand_in = self._stand_in
        if stand_in is NO_INSTANCE:
            stand_in = self._stand_in = stand_in_for(self._value, self._frame.subs)
        return stand_in


def needs_check(models: tuple[Any, ...], value: Any, typed: bool) -> bool:
    """Whether a final value with these models/marks needs a :class:`ModelCheck` at all (a
    lax number's mark skips numbers: most values pay nothing)."""
    for m in models:
        if type(m) is not TypeCheck or (typed and m.applies(value)):
            return True
    return False


def stand_in_for(value: Any, subs: dict[str | int, Any] | None) -> Any:
    """``value`` with the members in ``subs`` replaced (a shallow copy; ``value`` if none)."""
    if subs is None:
        return value
    if type(value) is list:
        out = list(value)
        for i, v in subs.items():
            assert isinstance(i, int)
            out[i] = v
        return out
    copied = dict(value)
    copied.update(subs)
    return copied


def substitute(parent: Frame, member: Frame, value: Any) -> None:
    """Hand the container what stands for a final member in a pydantic validation: the model
    instance it validated to, else a copy with its own members' stand-ins, else nothing (the
    value itself). Each container is copied once, so this costs O(document)."""
    stand_in = member.instance
    if stand_in is NO_INSTANCE:
        if member.subs is None:
            return
        stand_in = stand_in_for(value, member.subs)
    slot = member.path[-1]
    if parent.subs is None:
        parent.subs = {slot: stand_in}
    else:
        parent.subs[slot] = stand_in


def tracker_schema(
    adapter: pydantic.TypeAdapter[Any],
) -> tuple[dict[str, Any], list[ModelInfo | TypeCheck]]:
    """The schema the tracker checks a pydantic type against, and the models it marks."""
    models: list[ModelInfo | TypeCheck] = []
    generator = type("_Generator", (TrackerJsonSchema,), {"models": models})
    return adapter.json_schema(schema_generator=generator), models


class TrackerJsonSchema(MarkingJsonSchema):
    """pydantic's JSON Schema generator, made never stricter than pydantic (see the module)."""

    models: list[ModelInfo | TypeCheck]  # set on a subclass per schema by tracker_schema()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: list[ModelInfo] = []  # models being generated, innermost last

    # ------------------------------------------------------------------ models

    def model_schema(self, schema: core_schema.ModelSchema) -> dict[str, Any]:
        info = ModelInfo(schema["cls"])
        self._open.append(info)
        self._fielded.append(not schema.get("root_model"))
        try:
            result = dict(super().model_schema(schema))
        finally:
            self._open.pop()
            self._fielded.pop()
        inner = schema["schema"]
        if inner["type"] == "model-fields":
            _loosen_names(result, inner, self._by_name(schema))
        elif not schema.get("root_model"):
            # A model validator before the fields sees the raw input: the fields' schema says
            # nothing certain about it.
            result = {k: v for k, v in result.items() if k in ("title", "description")}
        self.models.append(info)
        return with_marker(result, len(self.models) - 1)

    def _by_name(self, schema: core_schema.ModelSchema) -> bool:
        config = schema["cls"].model_config
        return bool(config.get("validate_by_name") or config.get("populate_by_name"))

    def _unsafe(self) -> None:
        if self._open:
            self._open[-1].safe = False

    # ------------------------------------------------------------------ opaque validators

    def function_before_schema(self, schema: core_schema.BeforeValidatorFunctionSchema) -> Any:
        self._unsafe()
        return self._opaque(schema)

    def function_wrap_schema(self, schema: core_schema.WrapValidatorFunctionSchema) -> Any:
        self._unsafe()
        inner = schema.get("schema")
        if isinstance(inner, dict) and inner.get("type") == "model":
            # A wrap model validator: the value is opaque, but still that model's, validated
            # (and holding its fields' events) when it closes.
            info = ModelInfo(inner["cls"])
            info.safe = False
            info.holds = True
            self.models.append(info)
            return {MODEL_KEY: len(self.models) - 1}
        return self._opaque(schema)

    def function_plain_schema(self, schema: core_schema.PlainValidatorFunctionSchema) -> Any:
        self._unsafe()
        return self._opaque(schema)

    def json_or_python_schema(self, schema: core_schema.JsonOrPythonSchema) -> Any:
        self._unsafe()
        return super().json_or_python_schema(schema)

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> Any:
        if callable(schema["discriminator"]):
            self._unsafe()
        return super().tagged_union_schema(schema)

    # ------------------------------------------------------------------ lax scalars

    def _strict(self, schema: Any) -> bool:
        strict = schema.get("strict")
        if strict is None:
            strict = self._config.strict
        return bool(strict)

    def _widen(self, schema: Any, result: Any, *more: str, pattern: str | None = None) -> Any:
        if self._strict(schema) or not isinstance(result, dict) or "type" not in result:
            return result
        result = dict(result)
        kinds = result["type"] if isinstance(result["type"], list) else [result["type"]]
        result["type"] = [*kinds, *(k for k in more if k not in kinds)]
        if pattern is not None and "string" not in kinds:
            result["pattern"] = pattern  # only the strings pydantic could read as this type
        return result

    def int_schema(self, schema: core_schema.IntSchema) -> Any:
        result = super().int_schema(schema)
        if self._strict(schema):  # JSON Schema's integer takes 1.0; a strict int does not
            return self._mark(result, schema, kinds=(float,))
        result = self._widen(schema, result, "string", "boolean", pattern=_NUMERIC)
        # (a float too: pydantic reads only the integral ones below 2**64, JSON Schema any)
        return self._mark(result, schema, kinds=(*_LAX_NUMBER, float))

    def float_schema(self, schema: core_schema.FloatSchema) -> Any:
        result = super().float_schema(schema)
        kinds: tuple[type, ...] | None = _LAX_NUMBER
        if isinstance(result, dict) and "multipleOf" in result:
            # pydantic allows a float's rounding error (0.3 is a multiple of 0.1 there)
            result = {k: v for k, v in result.items() if k != "multipleOf"}
            kinds = None
        elif self._strict(schema):
            return result  # a strict float takes exactly JSON's numbers
        result = self._widen(schema, result, "string", "boolean", pattern=_NUMERIC)
        return self._mark(result, schema, kinds=kinds)

    def bool_schema(self, schema: core_schema.BoolSchema) -> Any:
        result = super().bool_schema(schema)
        if self._strict(schema):
            return result
        result = self._widen(schema, result, "number", "string", pattern=_BOOLEAN)
        return self._mark(result, schema, kinds=(int, float, str))

    def date_schema(self, schema: core_schema.DateSchema) -> Any:
        return self._leaf(self._widen(schema, super().date_schema(schema), "number"), schema)

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> Any:
        return self._leaf(self._widen(schema, super().datetime_schema(schema), "number"), schema)

    def time_schema(self, schema: core_schema.TimeSchema) -> Any:
        return self._leaf(self._widen(schema, super().time_schema(schema), "number"), schema)

    def timedelta_schema(self, schema: core_schema.TimedeltaSchema) -> Any:
        return self._leaf(self._widen(schema, super().timedelta_schema(schema), "number"), schema)

    def str_schema(self, schema: core_schema.StringSchema) -> Any:
        result = super().str_schema(schema)
        config = self._config
        transforms = (
            schema.get("strip_whitespace")
            or schema.get("to_lower")
            or schema.get("to_upper")
            or config.str_strip_whitespace
            or config.str_to_lower
            or config.str_to_upper
        )
        if transforms and isinstance(result, dict):
            # pydantic bounds the string after transforming it: the raw one may be longer.
            result = {k: v for k, v in result.items() if k not in _STRING_BOUNDS}
        pattern = result.get("pattern") if isinstance(result, dict) else None
        python_re = config.regex_engine == "python-re"
        if isinstance(pattern, str) and not no_wider_elsewhere(pattern, python_re=python_re):
            # pydantic's engine reads it more widely than ECMA-262 (\d is any digit there):
            # left to pydantic's final validation.
            result = {k: v for k, v in result.items() if k != "pattern"}
        if schema.get("pattern") is not None or (transforms and self._free()):
            # pydantic-core reads a pattern with its own engine, which can refuse what
            # ECMA-262 accepts (\s and U+FEFF, \b next to a non-ASCII letter): it judges.
            return self._mark(result, schema)
        return result

    def literal_schema(self, schema: core_schema.LiteralSchema) -> Any:
        return _python_equality(super().literal_schema(schema))

    def enum_schema(self, schema: core_schema.EnumSchema) -> Any:
        result = _python_equality(super().enum_schema(schema))
        if schema.get("sub_type") in ("int", "float") and not self._strict(schema):
            lax = {"anyOf": [result, {"type": "string"}]}  # lax: "1" for an IntEnum member
            return self._mark(lax, schema, kinds=(str,))
        return result


_STRING_BOUNDS = frozenset({"maxLength", "minLength", "pattern"})

_LAX_NUMBER = (str, bool)
"""What a lax number's mark judges: a string or a boolean read as a number (a JSON number
was judged by the JSON Schema's keywords)."""


# Supersets of the strings lax pydantic reads as a number / a boolean (a number's string may
# have whitespace around it, underscores, an exponent, or be inf/infinity/nan in any case).
_NUMERIC = r"^[\s\d_.+\-eE]*$|^\s*[+-]?(?i:inf|infinity|nan)\s*$"
_BOOLEAN = r"^\s*(?i:true|false|yes|no|on|off|t|f|y|n|1|0)\s*$"


def _python_equality(result: Any) -> Any:
    """``Literal``/``Enum`` compare with Python's ``==``: ``1`` is ``True`` there."""
    if not isinstance(result, dict):
        return result
    members = result.get("enum", [result["const"]] if "const" in result else None)
    if members is None:
        return result
    extra: list[Any] = []
    for m in members:
        if isinstance(m, bool):
            extra.append(int(m))
        elif isinstance(m, (int, float)) and m in (0, 1):
            extra.append(m == 1)
    extra = [e for e in extra if not any(type(e) is type(m) and e == m for m in members)]
    if not extra:
        return result
    widened = {k: v for k, v in result.items() if k not in ("const", "enum", "type")}
    widened["enum"] = [*members, *extra]
    return widened


def _loosen_names(result: dict[str, Any], fields: Any, by_name: bool) -> None:
    """Where a field may come under another key (its name, an alias choice, an alias path),
    the schema cannot say which keys are required or allowed: leave them open."""
    tricky = by_name
    paths: set[str] = set()
    for field in fields["fields"].values():
        alias = field.get("validation_alias")
        if isinstance(alias, list):
            tricky = True
            for choice in alias:
                path = choice if isinstance(choice, list) else [choice]
                if path and isinstance(path[0], str):
                    paths.add(path[0])
    if not tricky:
        return
    result.pop("required", None)
    if result.get("additionalProperties") is False:
        del result["additionalProperties"]
    props = result.get("properties")
    if isinstance(props, dict):
        props = {k: v for k, v in props.items() if k not in paths}
        if by_name:
            for name, field in fields["fields"].items():
                alias = field.get("validation_alias")
                if isinstance(alias, str) and alias in props and name not in props:
                    props[name] = props[alias]
        result["properties"] = props
