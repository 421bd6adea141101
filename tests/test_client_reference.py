"""docs/client.md is the light client's reference: every public method of every public class
`contextstore_client.__all__` exports (the asyncio twins included) has an entry there whose
arguments are the method's own, every result type lists its fields, every error has its row.
A method added without its entry, or an argument renamed, fails here."""

import dataclasses
import inspect
import re
from pathlib import Path

import contextstore_client as cs
import pytest
from contextstore_client._ops import op

DOC = Path(__file__).resolve().parent.parent / "docs" / "client.md"
# An entry: a heading naming `Owner.method(arguments)`, `Class(arguments)` or `function(arguments)`.
ENTRY = re.compile(r"^#{2,4} `(?P<owner>\w+)(?:\.(?P<name>\w+))?(?:\((?P<args>.*)\))?`\s*$", re.M)
# The asyncio twins: a method documented on the blocking class documents its twin (the reference
# says so, and test_the_async_twins_have_the_same_methods_and_arguments holds it true).
TWINS = {cs.AsyncContextStore: cs.ContextStore, cs.AsyncThreadHandle: cs.ThreadHandle,
         cs.AsyncSyncTracker: cs.SyncTracker}

EXPORTED = [getattr(cs, name) for name in cs.__all__]
CLASSES = [obj for obj in EXPORTED if inspect.isclass(obj)]
ERRORS = [c for c in CLASSES if issubclass(c, BaseException)]
RESULTS = [c for c in CLASSES if dataclasses.is_dataclass(c)]
HANDLES = [c for c in CLASSES if c not in ERRORS and c not in RESULTS]
FUNCTIONS = [obj for obj in EXPORTED if inspect.isfunction(obj)]


def parameters(function) -> list[str]:
    """The names a caller passes, in order (self left out)."""
    names = list(inspect.signature(function).parameters)
    return names[1:] if names and names[0] == "self" else names


def public_methods(cls: type) -> dict[str, list[str]]:
    """Each public method of the client defined on `cls` or its client bases, with its parameters
    (an operation's as its steps take them)."""
    methods = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if not owner.__module__.startswith("contextstore_client"):
            continue
        attribute = vars(owner)[name]
        if isinstance(attribute, op):
            methods[name] = parameters(attribute.steps)
        elif inspect.isfunction(attribute):
            methods[name] = parameters(attribute)
    return methods


def argument_names(text: str) -> list[str]:
    """`a, b=1, *, c=None, **d` -> [a, b, c, d]: the names of a documented argument list."""
    names, depth, current = [], 0, ""
    for char in text + ",":
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            part, current = current.strip(), ""
            if part and part not in ("*", "/"):
                names.append(part.lstrip("*").split("=")[0].strip())
        else:
            current += char
    return names


def entries() -> dict[str, list[str] | None]:
    """Each documented `Owner.method` / `Class` / `function`, with its argument names when given."""
    found: dict[str, list[str] | None] = {}
    for match in ENTRY.finditer(DOC.read_text()):
        key = match["owner"] + (f".{match['name']}" if match["name"] else "")
        found[key] = argument_names(match["args"]) if match["args"] is not None else None
    return found


def section(title: str) -> str:
    """The text under the heading "### `title`", up to the next heading."""
    text = DOC.read_text()
    start = text.index(f"\n### `{title}`\n") + len(f"\n### `{title}`\n")
    following = re.search(r"^#", text[start:], re.M)
    return text[start:start + following.start()] if following else text[start:]


def test_it_finds_the_classes_and_their_methods():
    assert {cs.ContextStore, cs.ThreadHandle, cs.AsyncContextStore, cs.AsyncThreadHandle} <= set(HANDLES)
    assert {"thread", "sessions", "agent_blobs"} <= set(public_methods(cs.ContextStore))
    assert {"append", "put_block", "reset_all"} <= set(public_methods(cs.ThreadHandle))
    assert public_methods(cs.ThreadHandle)["put_block"] == ["name", "value", "expr", "placement", "order"]
    assert argument_names('n=None, *, raw=False, part=4_000_000, **document_parts') == [
        "n", "raw", "part", "document_parts"]


@pytest.mark.parametrize("cls", HANDLES, ids=lambda c: c.__name__)
def test_every_public_method_has_an_entry_with_its_own_arguments(cls):
    documented = entries()
    missing, differing = [], []
    for name, params in sorted(public_methods(cls).items()):
        twin = TWINS.get(cls)
        key = next((k for k in (f"{cls.__name__}.{name}", twin and f"{twin.__name__}.{name}")
                    if k in documented), None)
        if key is None:
            missing.append(f"{cls.__name__}.{name}({', '.join(params)})")
        elif documented[key] != params:
            differing.append(f"{key}: documented {documented[key]}, takes {params}")
    assert not missing, f"docs/client.md has no entry for: {missing}"
    assert not differing, differing


@pytest.mark.parametrize("cls", HANDLES, ids=lambda c: c.__name__)
def test_every_class_has_an_entry_with_its_constructors_arguments(cls):
    documented = entries()
    key = cls.__name__ if cls.__name__ in documented else TWINS[cls].__name__
    assert key in documented, f"docs/client.md has no entry for {cls.__name__}"
    args = documented[cls.__name__] if documented.get(cls.__name__) is not None else documented[key]
    if args is not None:
        assert args == parameters(cls.__init__), cls.__name__


@pytest.mark.parametrize(("asynchronous", "blocking"), TWINS.items(), ids=lambda c: c.__name__)
def test_the_async_twins_have_the_same_methods_and_arguments(asynchronous, blocking):
    mine, theirs = public_methods(asynchronous), public_methods(blocking)
    assert set(mine) ^ set(theirs) <= {"aclose", "close"}
    assert {name: mine[name] for name in mine.keys() & theirs.keys()} == {
        name: theirs[name] for name in mine.keys() & theirs.keys()}
    assert parameters(asynchronous.__init__) == parameters(blocking.__init__)


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_every_function_has_an_entry_with_its_arguments(function):
    assert entries().get(function.__name__) == parameters(function)


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_every_result_type_lists_each_of_its_fields(cls):
    text = section(cls.__name__)
    missing = [f.name for f in dataclasses.fields(cls) if f"`{f.name}`" not in text]
    assert not missing, f"docs/client.md's {cls.__name__} does not list {missing}"


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_has_its_row(cls):
    assert re.search(rf"^\| `{cls.__name__}` \|", DOC.read_text(), re.M), cls.__name__


def test_the_placements_a_block_may_have_are_stated():
    blocks = DOC.read_text().split("\n### Blocks\n")[1].split("\n### ")[0]
    assert '`"prefix"`' in blocks and '`"suffix"`' in blocks and "one of exactly two" in blocks
