"""References: where each ``$ref``, ``$recursiveRef`` and ``$dynamicRef`` points, in the
canonical form.

The translation (:mod:`sdk._schema._dialects`) records, as it walks a document, every resource
(the document, each embedded resource with its URI, each remote one), every subschema's place in
the canonical form, every anchor and every reference met; :class:`References` then patches each
reference into a static ``$ref`` to where its target sits in the canonical form, written as a
JSON Pointer (relative where it can be), and records the target itself for the node compiler.

A reference to a resource that is not in the document is looked up in the caller's ``registry``
(a ``referencing.Registry`` or a mapping of URI to schema; then the meta-schemas of every draft,
which ship with ``jsonschema``), translated by its own dialect and embedded under ``$defs`` with
its URI as ``$id``; nothing is ever fetched unless the caller's registry does it. A dynamic
reference is made static when the target is the same whatever path the evaluation takes: the
target resource has no (matching) dynamic anchor, the document's root resource has one (the root
is the outermost resource of every path), or one resource alone has one; otherwise it is
refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote, urljoin

import referencing
import referencing.exceptions

from sdk._errors import SchemaError

__all__ = ["RefSite", "References", "Resource", "join", "quote_pointer", "split"]


class Resource:
    """One schema resource (the document, an embedded ``$id``, a remote one)."""

    __slots__ = ("dialect", "dynamic", "out", "raw", "recursive", "uri")

    def __init__(self, uri: str, raw: Any, dialect: str) -> None:
        self.uri = uri
        self.raw = raw
        self.dialect = dialect
        self.out: dict[str, Any] | None = None  # its canonical dict
        self.recursive = False  # $recursiveAnchor: true at its root
        self.dynamic: set[str] = set()  # its $dynamicAnchor names


class RefSite:
    """A reference met in the walk, patched once every resource is known."""

    __slots__ = ("base", "keyword", "node", "ref", "resources", "where")

    def __init__(
        self,
        node: dict[str, Any],
        keyword: str,
        ref: str,
        base: str,
        resources: tuple[Resource, ...],
        where: str,
    ) -> None:
        self.node = node
        self.keyword = keyword
        self.ref = ref
        self.base = base
        self.resources = resources  # the lexical chain of resources, outermost first
        self.where = where


class References:
    """The resources, places, anchors and reference sites of one document, and the patching of
    every reference once all are known. The translation subclasses it and provides
    :meth:`_declared`, :meth:`_resource_root` and :meth:`_schema` (a remote resource, or a
    subschema no keyword of its dialect makes one, is translated when a reference first names
    it)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.resources: dict[str, Resource] = {}
        self.sites: list[RefSite] = []
        # id() of each translated original -> (its resource, its canonical pointer there, the
        # canonical schema, where it is in the input).
        self.placed: dict[int, tuple[Resource, str, Any, str]] = {}
        # (resource, name) -> (the canonical schema, where it is in the input, its pointer)
        self.anchors: dict[tuple[str, str], tuple[dict[str, Any], str, str]] = {}
        self.targets: dict[int, tuple[Any, str]] = {}  # id() of each {"$ref"} -> its target
        self.root: Resource | None = None
        self.extra = 0

    # ------------------------------------------------------------------ the translation's part

    def _declared(self, value: Any, where: str) -> str:
        raise NotImplementedError

    def _resource_root(
        self, raw: Any, base: str, dialect: str, where: str, chain: tuple[Resource, ...]
    ) -> Any:
        raise NotImplementedError

    def _schema(
        self,
        raw: Any,
        where: str,
        dialect: str,
        base: str,
        resource: Resource,
        at: str,
        chain: tuple[Resource, ...],
        depth: int,
    ) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------------ references

    def resolve_all(self) -> None:
        """Patch every reference into a static ``$ref`` into the canonical document (remote
        resources embedded as they are met)."""
        done = 0
        dynamic: list[RefSite] = []
        while done < len(self.sites) or dynamic:
            while done < len(self.sites):
                site = self.sites[done]
                done += 1
                if site.keyword == "$ref":
                    self._patch(site, site.ref)
                else:
                    self._resource_at(split(join(site.base, site.ref))[0], site)
                    dynamic.append(site)
            # Dynamic references are decided once every resource is known.
            for site in dynamic:
                self._patch(site, self._dynamic(site))
            dynamic = []

    def _resource_at(self, uri: str, site: RefSite) -> Resource:
        found = self.resources.get(uri)
        if found is not None:
            return found
        contents = self._retrieve(uri, site)
        dialect = site.resources[-1].dialect
        if isinstance(contents, Mapping) and "$schema" in contents:
            dialect = self._declared(contents["$schema"], uri)
        root = self.root
        assert root is not None
        out = self._resource_root(contents, uri, dialect, uri, (root,))
        resource = self.resources[uri]
        if isinstance(out, dict):
            out.setdefault("$id", uri)  # its own $id, if it has one, is what it is known by
        else:  # a boolean resource: an object that says the same
            out = {"$id": uri} if out else {"$id": uri, "not": {}}
            resource.out = out
        if root.out is None:  # pragma: no cover - a boolean root holds no reference
            raise AssertionError(uri)
        defs = root.out.setdefault("$defs", {})
        defs[f"fieldstream-resource-{len(defs)}"] = out
        return resource

    def _retrieve(self, uri: str, site: RefSite) -> Any:
        registry = self.registry
        if isinstance(registry, referencing.Registry):
            try:
                return registry.get_or_retrieve(uri).value.contents
            except (referencing.exceptions.NoSuchResource, referencing.exceptions.Unresolvable):
                pass
            except Exception as exc:  # the caller's retrieve function failed
                cause = exc.__cause__ or exc
                raise SchemaError(
                    f"$ref {site.ref!r} (at {site.where or '/'}): retrieving {uri!r} from the "
                    f"registry failed: {cause}",
                    keyword=site.keyword,
                    pointer=site.where,
                ) from exc
        elif isinstance(registry, Mapping):
            for key in (uri, uri + "#"):
                if key in registry:
                    return registry[key]
        meta = _meta_schema(uri)
        if meta is not None:
            return meta
        where = (
            "in this schema nor in the registry passed"
            if registry is not None
            else ("in this schema (pass registry= to resolve references to other documents)")
        )
        raise SchemaError(
            f"$ref {site.ref!r} (at {site.where or '/'}) points at {uri!r}, which is not {where}; "
            "fieldstream never fetches schemas from the network itself",
            keyword=site.keyword,
            pointer=site.where,
        )

    def _patch(self, site: RefSite, ref: str) -> None:
        """Point ``site`` at the canonical place of what ``ref`` (from its base) names."""
        uri, fragment = split(join(site.base, ref))
        resource = self._resource_at(uri, site)
        target: str | bool
        schema: tuple[Any, str] = (None, "")
        if fragment.startswith("/") or not fragment:
            found = self._pointer(resource, fragment, site)
            if isinstance(found, bool):
                target = found
            else:  # relative where it can be: what most servers' converters follow
                home = "" if found[0] == site.base else found[0]
                target = f"{home}#{quote_pointer(found[1])}"
                schema = (found[2], found[3])
        else:  # a plain-name anchor: written as a pointer, which every converter follows
            anchored = self.anchors.get((resource.uri, fragment))
            if anchored is None:
                raise SchemaError(
                    f"{site.keyword} {site.ref!r} (at {site.where or '/'}) points at nothing in "
                    "this schema (no anchor has that name)",
                    keyword=site.keyword,
                    pointer=site.where,
                )
            schema = anchored[:2]
            home = "" if resource.uri == site.base else resource.uri
            target = f"{home}#{quote_pointer(anchored[2])}"
        node = site.node
        if isinstance(target, bool):
            node.setdefault("allOf", []).append(target)
            return
        if site.keyword != "$ref" and "$ref" in node:
            node = {}
            site.node.setdefault("allOf", []).append(node)
        node["$ref"] = target
        self.targets[id(node)] = schema

    def _pointer(
        self, resource: Resource, fragment: str, site: RefSite
    ) -> tuple[str, str, Any, str] | bool:
        """The canonical place of what ``fragment`` names in the original (its resource's URI,
        its pointer there, the canonical schema), or the boolean schema it names."""
        target: Any = resource.raw
        for part in fragment.split("/")[1:]:
            token = unquote(part) if "%" in part else part
            if "~" in token:
                token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                raise SchemaError(
                    f"$ref {site.ref!r} (at {site.where or '/'}) points at nothing in this schema",
                    keyword=site.keyword,
                    pointer=site.where,
                )
        if isinstance(target, bool):
            return target
        placed = self.placed.get(id(target))
        if placed is not None:
            return placed[0].uri, placed[1], placed[2], placed[3]
        # A schema in a place no keyword of its dialect makes a schema (inside an unknown
        # keyword, say): translate it now, into its resource's $defs.
        if resource.out is None:
            raise SchemaError(
                f"$ref {site.ref!r} (at {site.where or '/'}) points at nothing in this schema",
                keyword=site.keyword,
                pointer=site.where,
            )
        self.extra += 1
        name = f"fieldstream-ref-{self.extra}"
        at = f"/$defs/{name}"
        root = self.root
        assert root is not None
        chain = (resource,) if root is resource else (root, resource)
        where = f"{site.where}/$ref"
        out = self._schema(target, where, resource.dialect, resource.uri, resource, at, chain, 0)
        resource.out.setdefault("$defs", {})[name] = out
        return resource.uri, at, out, where

    def _dynamic(self, site: RefSite) -> str:
        """The static reference a ``$recursiveRef``/``$dynamicRef`` stands for, when every
        evaluation path gives the same one."""
        root = self.root
        assert root is not None
        uri, fragment = split(join(site.base, site.ref))
        target = self.resources[uri]
        if site.keyword == "$recursiveRef":
            if not target.recursive:
                return site.ref
            holders = [r for r in self.resources.values() if r.recursive]
            chosen = root if root.recursive else (holders[0] if len(holders) == 1 else None)
            suffix = ""
        else:
            if not fragment or fragment.startswith("/") or fragment not in target.dynamic:
                return site.ref
            holders = [r for r in self.resources.values() if fragment in r.dynamic]
            chosen = (
                root if fragment in root.dynamic else (holders[0] if len(holders) == 1 else None)
            )
            suffix = fragment
        if chosen is None or (not chosen.uri and site.base):
            raise SchemaError(
                f"{site.keyword} {site.ref!r} (at {site.where or '/'}) may name a different "
                "schema depending on the path the evaluation takes (several resources hold its "
                "anchor, the outermost one not the document's root): the tracker resolves "
                "references before it reads any output",
                keyword=site.keyword,
                pointer=site.where,
            )
        return f"{chosen.uri}#{suffix}"


def _meta_schema(uri: str) -> Any:
    """A draft's meta-schema (shipped with jsonschema), or ``None``."""
    try:
        from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - jsonschema depends on it
        return None
    for key in (uri, uri.rstrip("#"), uri + "#"):
        try:
            return REGISTRY.contents(key)
        except (LookupError, referencing.exceptions.NoSuchResource):
            continue
    return None


def join(base: str, ref: str) -> str:
    """``ref`` resolved against ``base`` (a fragment alone keeps any base, a URN's too)."""
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    return urljoin(base, ref)


def split(uri: str) -> tuple[str, str]:
    """``uri`` without its fragment, and the fragment."""
    head, _, fragment = uri.partition("#")
    return head, fragment


def quote_pointer(pointer: str) -> str:
    """A JSON Pointer as a URI fragment (percent-encoded where a fragment needs it)."""
    return quote(pointer, safe="/~!$&'()*+,;=:@")
