"""A JSON Schema in the canonical form (Draft 2020-12, :mod:`sdk._schema._dialects`) compiled
into :class:`Node` objects, one per sub-schema.

A node holds its schema's keywords in the form the checker uses them: the kinds ``type`` allows,
``enum``/``const`` members, string, number, object and array bounds, ``pattern``s compiled as
ECMA-262 regexes (``sdk._regex._ecma``: exact for the final check, sound on prefixes), the format
check when formats are asserted, the schemas members must follow, and the applicators
(``$ref``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
``dependentSchemas``) as links to other nodes. Each ``$ref`` links to the subschema the
translation resolved it to (JSON Pointers, ``$id``, ``$anchor``, remote resources embedded).

The translation already dropped the keywords its dialect does not define and vetted every value;
a keyword this module cannot check is still refused here, so that none is ever ignored by
mistake.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sdk._errors import SchemaError
from sdk._regex._ecma import (
    EcmaRegex,
    EcmaRegexError,
    PatternTooLarge,
    compile_ecma,
    pattern_limit,
)
from sdk._schema._formats import FormatCheck, format_check
from sdk._schema._validators import SubschemaJudge
from sdk._schema._vocabulary import REFERENCE, VOCABULARIES

__all__ = ["KINDS", "MODEL_KEY", "Node", "NodeCompiler", "Unevaluated"]

KINDS = ("object", "array", "string", "number", "boolean", "null")
"""The kinds of JSON value, named as JSON Schema's types (and as ``partial.Kind`` values)."""

MODEL_KEY = "x-fieldstream-model"
"""Marks the schema of a pydantic model in the tracker's copy of a pydantic type's schema."""

_ACCEPTED = frozenset(
    key for key, role in VOCABULARIES["2020-12"].keywords.items() if role != REFERENCE
) | {"$ref"}
"""What may reach a node: the canonical form is Draft 2020-12, with every reference made a
static ``$ref`` (a ``$dynamicRef`` that reached a node would be ignored by mistake)."""
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


class Node:
    """One compiled sub-schema. Read-only once compiled; shared by every tracker of the schema."""

    __slots__ = (
        "additional",
        "all_of",
        "any_of",
        "contains",
        "dep_required",
        "dep_schemas",
        "draft4_integer",
        "else_",
        "enum",
        "false",
        "format",
        "if_",
        "items",
        "max_contains",
        "max_items",
        "max_length",
        "max_props",
        "min_contains",
        "min_items",
        "min_length",
        "min_props",
        "model",
        "not_",
        "numbers",
        "one_of",
        "pattern_props",
        "patterns",
        "pending",
        "prefix",
        "property_names",
        "props",
        "raw",
        "ref",
        "required",
        "then",
        "types",
        "unevaluated",
        "unique",
        "where",
    )

    def __init__(self, where: str, raw: Any) -> None:
        self.where = where
        """JSON Pointer (or ``$ref``) of this sub-schema, for messages."""
        self.raw = raw
        """The sub-schema as given (a dict, or ``True``/``False``)."""
        self.false = raw is False
        """The schema ``false``: no value is valid."""
        self.types: frozenset[str] | None = None
        """``type`` as a set of names (``None``: any type)."""
        self.draft4_integer = False
        """``type`` allows integers and not every number, read as draft-04: a number written
        with a fraction or an exponent (``1.0``, ``1e2``) is not an integer (draft-06 made it
        one when its value is whole)."""
        self.enum: tuple[str, tuple[Any, ...]] | None = None
        """``("enum", members)`` or ``("const", (value,))`` (both: ``const`` is in ``all_of``)."""
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.patterns: tuple[tuple[EcmaRegex, str], ...] = ()
        self.format: FormatCheck | None = None
        self.numbers: tuple[tuple[str, int | float], ...] = ()
        self.props: dict[str, Node] = {}
        self.pattern_props: tuple[tuple[EcmaRegex, Node], ...] = ()
        self.additional: Node | None = None
        """``additionalProperties`` (``None``: any value)."""
        self.property_names: Node | None = None
        self.required: tuple[str, ...] = ()
        self.min_props: int | None = None
        self.max_props: int | None = None
        self.dep_required: tuple[tuple[str, tuple[str, ...]], ...] = ()
        self.dep_schemas: tuple[tuple[str, Node], ...] = ()
        self.prefix: tuple[Node, ...] = ()
        self.items: Node | None = None
        """``items``, for the indices after ``prefixItems`` (``None``: any value)."""
        self.contains: Node | None = None
        self.min_contains = 1
        self.max_contains: int | None = None
        self.min_items: int | None = None
        self.max_items: int | None = None
        self.unique = False
        self.ref: Node | None = None
        self.all_of: tuple[Node, ...] = ()
        self.any_of: tuple[Node, ...] = ()
        self.one_of: tuple[Node, ...] = ()
        self.not_: Node | None = None
        self.if_: Node | None = None
        self.then: Node | None = None
        self.else_: Node | None = None
        self.unevaluated: Unevaluated | None = None
        """``unevaluatedProperties``/``unevaluatedItems``: judged on the final value."""
        self.model: Any = None
        """The pydantic model this sub-schema describes (see :mod:`sdk._schema._pydantic`)."""
        self.pending: NodeCompiler | None = None
        """The compiler that will fill this node's keywords when it is first needed."""

    def ready(self) -> Node:
        """This node with its keywords filled in (a node is filled the first time a value is
        checked against it: a large schema's unused parts cost nothing). The caller holds the
        lock of the schema's conjunctions (:class:`~sdk._schema._conj.Conjs`)."""
        compiler = self.pending
        if compiler is not None:
            assert isinstance(self.raw, Mapping)
            compiler.fill(self, self.raw)
            # Only once filled: a fill that raises leaves the node to be filled (and refused)
            # again, never half-filled for the next tracker of this cached schema.
            self.pending = None
        return self

    def __repr__(self) -> str:
        return f"Node({self.where or '/'!r})"


class NodeCompiler:
    """Compiles the sub-schemas of one root schema; each dict is compiled once (cycles through
    ``$ref`` are fine: a node exists before its children are compiled).

    ``assert_formats`` makes ``format`` a check (where a checker knows the format);
    ``models`` resolves the :data:`MODEL_KEY` markers of a pydantic type's schema;
    ``places`` says where each subschema with ``unevaluated*`` is (see
    :attr:`~sdk._schema._dialects.Canonical.places`); ``read_as`` the dialect of each subschema
    not read as Draft 2020-12 (:attr:`~sdk._schema._dialects.Canonical.read_as`), which decides
    what ``integer`` and each format mean there.
    """

    def __init__(
        self,
        root: Any,
        targets: Mapping[int, tuple[Any, str]],
        *,
        assert_formats: bool = False,
        models: Sequence[Any] = (),
        places: Mapping[int, str] | None = None,
        read_as: Mapping[int, str] | None = None,
    ) -> None:
        self._root = root
        self._read_as = read_as or {}
        self._targets = targets
        self._places = places or {}
        self._judge: SubschemaJudge | None = None
        self._assert_formats = assert_formats
        self._models = models
        self._nodes: dict[int, Node] = {}

    def compile_root(self) -> Node:
        """The root's node. Its sub-schemas are compiled when a value first reaches them
        (:meth:`Node.ready`): the translation vetted every one of them already."""
        return self._node(self._root, "").ready()

    # ------------------------------------------------------------------ internals

    def _node(self, raw: Any, where: str) -> Node:
        found = self._nodes.get(id(raw))
        if found is not None:
            return found
        if not isinstance(raw, (bool, Mapping)):
            raise SchemaError(
                f"a schema must be an object or a boolean, got {type(raw).__name__} at "
                f"{where or '/'}",
                pointer=where,
            )
        node = Node(where, raw)
        self._nodes[id(raw)] = node
        if isinstance(raw, Mapping):
            node.pending = self
        return node

    def fill(self, node: Node, raw: Mapping[str, Any]) -> None:
        """Compile ``raw``'s keywords into ``node`` (its sub-schemas become pending nodes)."""
        where = node.where
        for key in raw:
            if key in _ACCEPTED or key.startswith("x-"):
                continue
            raise SchemaError(
                f"unsupported JSON Schema keyword {key!r} at {where or '/'}: the tracker cannot "
                "check it, and ignoring it could let invalid output through",
                keyword=key,
                pointer=where,
            )
        sub = self._sub_compiler(node)
        dialect = self._read_as.get(id(raw), "2020-12")
        if "type" in raw:
            t = raw["type"]
            node.types = frozenset([t] if isinstance(t, str) else t)
            node.draft4_integer = (
                dialect == "draft-04" and "integer" in node.types and "number" not in node.types
            )
        if "enum" in raw:
            node.enum = ("enum", tuple(raw["enum"]))
        if "const" in raw:
            const = ("const", (raw["const"],))
            if node.enum is None:
                node.enum = const
            else:  # both: the const becomes a conjunct of its own
                extra = Node(f"{where}/const", {"const": raw["const"]})
                extra.enum = const
                node.all_of += (extra,)
        node.max_length = raw.get("maxLength")
        node.min_length = raw.get("minLength")
        if "pattern" in raw:
            node.patterns = ((_regex(raw["pattern"], f"{where}/pattern"), raw["pattern"]),)
        if self._assert_formats and isinstance(raw.get("format"), str):
            node.format = format_check(raw["format"], dialect)
        node.numbers = tuple((k, raw[k]) for k in NUMBER_KEYWORDS if k in raw)

        node.props = {
            k: sub(v, f"/properties/{escape(k)}") for k, v in raw.get("properties", {}).items()
        }
        node.pattern_props = tuple(
            (_regex(p, f"{where}/patternProperties"), sub(v, f"/patternProperties/{escape(p)}"))
            for p, v in raw.get("patternProperties", {}).items()
        )
        if "additionalProperties" in raw:
            node.additional = _trivial_to_none(
                sub(raw["additionalProperties"], "/additionalProperties")
            )
        if "propertyNames" in raw:
            node.property_names = _trivial_to_none(sub(raw["propertyNames"], "/propertyNames"))
        node.required = tuple(dict.fromkeys(raw.get("required", ())))
        node.min_props = raw.get("minProperties")
        node.max_props = raw.get("maxProperties")
        node.dep_required = tuple(
            (k, tuple(v)) for k, v in raw.get("dependentRequired", {}).items() if v
        )
        node.dep_schemas = tuple(
            (k, sub(v, f"/dependentSchemas/{escape(k)}"))
            for k, v in raw.get("dependentSchemas", {}).items()
        )

        node.prefix = tuple(
            sub(v, f"/prefixItems/{i}") for i, v in enumerate(raw.get("prefixItems", ()))
        )
        if "items" in raw:
            node.items = _trivial_to_none(sub(raw["items"], "/items"))
        if "contains" in raw:
            node.contains = sub(raw["contains"], "/contains")
            node.min_contains = raw.get("minContains", 1)
            node.max_contains = raw.get("maxContains")
        node.min_items = raw.get("minItems")
        node.max_items = raw.get("maxItems")
        node.unique = bool(raw.get("uniqueItems", False))

        if "$ref" in raw:
            node.ref = self._resolve(raw, where)
        node.all_of += tuple(sub(v, f"/allOf/{i}") for i, v in enumerate(raw.get("allOf", ())))
        node.any_of = tuple(sub(v, f"/anyOf/{i}") for i, v in enumerate(raw.get("anyOf", ())))
        node.one_of = tuple(sub(v, f"/oneOf/{i}") for i, v in enumerate(raw.get("oneOf", ())))
        if "not" in raw:
            node.not_ = sub(raw["not"], "/not")
        if "if" in raw:
            node.if_ = sub(raw["if"], "/if")
            if "then" in raw:
                node.then = sub(raw["then"], "/then")
            if "else" in raw:
                node.else_ = sub(raw["else"], "/else")
        else:  # then/else without if are inert, but their keywords are still vetted
            for k in ("then", "else"):
                if k in raw:
                    sub(raw[k], f"/{k}")
        props = not _anything(raw.get("unevaluatedProperties", True))
        items = not _anything(raw.get("unevaluatedItems", True))
        if props or items:
            node.unevaluated = Unevaluated(self._judge_of(node, raw), props, items)
        marker = raw.get(MODEL_KEY)
        if isinstance(marker, int) and 0 <= marker < len(self._models):
            node.model = self._models[marker]

    def _judge_of(self, node: Node, raw: Mapping[str, Any]) -> Callable[[Any], str | None]:
        place = self._places.get(id(raw))
        if place is None:  # the translation records every one it writes
            raise SchemaError(
                f"unevaluatedProperties/unevaluatedItems at {node.where or '/'} cannot be "
                "located in the schema",
                keyword="unevaluatedProperties"
                if "unevaluatedProperties" in raw
                else ("unevaluatedItems"),
                pointer=node.where,
            )
        judge = self._judge
        if judge is None:
            judge = self._judge = SubschemaJudge(self._root)
        return judge.at(place)

    def _sub_compiler(self, node: Node) -> Any:
        def sub(raw: Any, rel: str) -> Node:
            return self._node(raw, node.where + rel)

        return sub

    def _resolve(self, raw: Mapping[str, Any], where: str) -> Node:
        target = self._targets.get(id(raw), _MISSING)
        if target is _MISSING:  # the translation resolves every reference it writes
            raise SchemaError(
                f"$ref {raw['$ref']!r} (at {where or '/'}) points at nothing in this schema",
                keyword="$ref",
                pointer=where,
            )
        return self._node(*target)


_MISSING: Any = object()


class Unevaluated:
    """A node's ``unevaluatedProperties``/``unevaluatedItems``: they depend on what every
    applicator of the node evaluated, so the node's whole subschema is judged on the final
    object or array (by jsonschema, which collects those annotations)."""

    __slots__ = ("items", "judge", "props")

    def __init__(self, judge: Callable[[Any], str | None], props: bool, items: bool) -> None:
        self.judge = judge
        """The node's subschema on a final value: the first error's message, or ``None``."""
        self.props = props
        """``unevaluatedProperties`` is there (and not ``true``): objects are judged."""
        self.items = items
        """``unevaluatedItems`` is there (and not ``true``): arrays are judged."""


def _trivial_to_none(node: Node) -> Node | None:
    """``True`` and ``{}`` stand for "anything goes": ``None``, the common case."""
    return None if _anything(node.raw) else node


def _anything(raw: Any) -> bool:
    """``True`` and ``{}``: every value is valid."""
    return raw is True or (isinstance(raw, Mapping) and not raw)


def _regex(pattern: str, where: str) -> EcmaRegex:
    try:
        return compile_ecma(pattern, max_size=pattern_limit.get())
    except PatternTooLarge as exc:
        raise SchemaError(
            f"the pattern {pattern!r} at {where} is too large to check: {exc} (a larger "
            "compile_schema(max_pattern_size=...) lets it through, at that compile's cost)",
            keyword="pattern",
            pointer=where,
        ) from None
    except EcmaRegexError as exc:
        raise SchemaError(
            f"the pattern {pattern!r} at {where} is not a valid regular expression: {exc}",
            keyword="pattern",
            pointer=where,
        ) from None


def escape(token: str) -> str:
    """``token`` as a JSON Pointer reference token (``~`` and ``/`` escaped)."""
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")
