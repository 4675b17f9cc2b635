"""What ``docs/architecture.md`` says of the providers, checked against the code: a provider is
named in one place (the registry), every registry entry's folder exists and has the face the
registry reads, a new provider is a copy of the folder the page names, and the request log is
called where the page says."""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
from collections.abc import Iterator, Mapping
from typing import get_args

import pytest

from sdk import _providers
from sdk._cli._args import build_parser
from sdk._providers import NATIVE_PROVIDERS, PROVIDERS, Provider, provider_backend

ROOT = pathlib.Path(__file__).resolve().parents[1]
SDK = ROOT / "sdk"
HTTP = SDK / "_http"
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def _strings(tree: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of ``tree`` that are not docstrings."""
    docstrings: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            for statement in node.body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    docstrings.add((statement.lineno, statement.col_offset))
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) or (node.__class__ is not ast.Constant):
            continue
        if isinstance(node.value, str) and (node.lineno, node.col_offset) not in docstrings:
            yield node


def _named_outside(name: str) -> list[str]:
    """Where ``name`` is written as a string outside the registry and its own folder."""
    own = HTTP / name
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted(SDK.rglob("*.py"))
        if path != SDK / "_providers.py" and own not in path.parents
        for node in _strings(ast.parse(path.read_text()))
        if node.value == name
    ]


def test_the_literal_is_the_registry() -> None:
    assert get_args(Provider) == PROVIDERS
    assert NATIVE_PROVIDERS == PROVIDERS[1:]
    assert _providers.DEFAULT_PROVIDER == PROVIDERS[0]


def test_the_scan_sees_a_name_where_it_is_written() -> None:
    # The check below reads string constants; it must see the registry's own.
    written = [n.value for n in _strings(ast.parse((SDK / "_providers.py").read_text()))]
    assert all(written.count(name) >= 2 for name in PROVIDERS)  # the literal and the registry


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_provider_is_named_in_one_place(name: str) -> None:
    assert "A provider is named in one place: the registry, `PROVIDERS` in `sdk/_providers.py`" in (
        " ".join(PAGE.split())
    )
    assert _named_outside(name) == []


def test_the_command_line_offers_the_registry() -> None:
    (action,) = [a for a in build_parser()._actions if "--provider" in a.option_strings]
    assert list(action.choices or ()) == sorted(NATIVE_PROVIDERS)


@pytest.mark.parametrize("name", PROVIDERS)
def test_every_entry_has_its_folder_and_face(name: str) -> None:
    folder = HTTP / name
    assert (folder / "__init__.py").is_file()
    face = importlib.import_module(f"sdk._http.{name}")
    assert isinstance(face.OPTIONS.__optional_keys__, frozenset)
    assert isinstance(face.BACKENDS, Mapping) and face.BACKENDS
    for api, backend in face.BACKENDS.items():
        assert isinstance(api, str) and callable(backend)
        assert set(face.OPTIONS.__optional_keys__) >= {"http_client", "timeout", "headers"}
    assert {"OPTIONS", "BACKENDS"} <= set(face.__all__)
    if hasattr(face, "async_client"):
        assert face.async_client(object) is object  # anything not its SDK's: as it is


@pytest.mark.parametrize("name", NATIVE_PROVIDERS)
def test_the_registry_builds_each_provider(name: str) -> None:
    backend = provider_backend(name, "http://127.0.0.1:1", "key", "m", "chat", {})
    assert type(backend) is importlib.import_module(f"sdk._http.{name}").BACKENDS["chat"]


def _modules(folder: pathlib.Path) -> set[str]:
    return {p.name for p in folder.glob("*.py")}


def _lines(folder: pathlib.Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in folder.glob("*.py"))


def test_the_folder_to_copy_is_the_smallest_with_every_role() -> None:
    said = re.search(r"\*\*Adding a provider\*\*: copy `(\w+)/`", PAGE)
    assert said is not None
    model = HTTP / said.group(1)
    assert model.name in PROVIDERS and "one line, the name, to `PROVIDERS`" in " ".join(
        PAGE.split()
    )
    # Every role any provider folder has beside the OpenAI flavours' own modules.
    for name in PROVIDERS:
        folder = HTTP / name
        if _modules(folder) >= _modules(model) and folder != model:
            assert _lines(folder) > _lines(model), name


def _calls(function: ast.AST, callee: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name | ast.Attribute)
        and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == callee
        for node in ast.walk(function)
    )


def test_the_request_log_is_called_where_the_page_says() -> None:
    said = re.search(r"`sdk/_logs.py` \(called from `(\w+)\.(\w+)` in `([\w/.]+)`", PAGE)
    assert said is not None
    cls, method, path = said.groups()
    tree = ast.parse((ROOT / path).read_text())
    (found,) = [
        item
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == cls
        for item in node.body
        if isinstance(item, ast.AsyncFunctionDef | ast.FunctionDef) and item.name == method
    ]
    assert _calls(found, "log_request")
    # ... and nowhere else: it is where every request is sent.
    elsewhere = [
        str(p.relative_to(ROOT))
        for p in SDK.rglob("*.py")
        if p != ROOT / path
        and p.name != "_logs.py"
        and _calls(ast.parse(p.read_text()), "log_request")
    ]
    assert elsewhere == []


def test_no_shared_module_names_a_provider() -> None:
    assert "Nothing in the shared modules names a provider." in " ".join(PAGE.split())
    for path in HTTP.glob("_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                assert not (
                    parts[:2] == ["sdk", "_http"] and parts[2:3] in [[p] for p in PROVIDERS]
                ), (
                    path.name,
                    node.module,
                )


def test_api_and_server_are_each_written_once() -> None:
    """``Api`` and ``Server`` (``sdk/_http/openai/_flavours.py``) are literals; nothing else
    lists their values again (``APIS``, ``SERVERS`` and every check read the literals)."""
    from sdk._http.openai._flavours import APIS, SERVERS, Api, Server

    assert (APIS, SERVERS) == (get_args(Api), get_args(Server))
    vocabularies = {frozenset(get_args(Api)), frozenset(get_args(Server))}
    listed = []
    for path in sorted(SDK.rglob("*.py")):
        tree = ast.parse(path.read_text())
        literals = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Tuple | ast.List | ast.Set) or id(node) in literals:
                continue
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and frozenset(values) in vocabularies:
                listed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert listed == []
