"""Runs memory-tool commands against the Anthropic SDK's BetaLocalFilesystemMemoryTool and
contextstore's ContextStoreMemoryTool side by side and records what each answered (the
differential tests in test_anthropic_memory.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anthropic.lib.tools import ToolError
from hypothesis import strategies as st

# A name alphabet with the edges a file system and a key-value store disagree on: hidden names,
# dots, percent-encoded dots, unicode (composed and not), spaces, a name that is also a prefix.
NAMES = ["a\x00b", "a", "b.md", "notes", "ü.txt", "u\u0308.txt", ".hidden", "%2e%2e", "..", ".", "",
         "x y", "日本語", "a.txt"]
PREFIXES = ["/memories/", "/memories/", "/memories/", "/memories", "/memories//", "/memoriesX/",
            "memories/", "/memories/../memories/", "/memories/../"]
TEXT = st.text(st.sampled_from(["a", "b", "é", "\n", "\r", " ", "x", "日", "\t", "🙂", "\x00"]),
               max_size=30)


CLEAN = ["a", "b.md", "notes", "ü.txt", "u\u0308.txt", ".hidden", "%2e%2e", "x y", "日本語"]


@st.composite
def edge_paths(draw: Any) -> str:
    prefix = draw(st.sampled_from(PREFIXES))
    parts = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=3))
    return prefix + "/".join(parts)


@st.composite
def command_sequences(draw: Any, max_size: int = 15) -> list[dict[str, Any]]:
    """Commands that mostly meet again on a few paths (so files exist to edit, rename and
    delete), now and then on an edge path (traversal, odd prefixes, dots)."""
    pool = draw(st.lists(st.lists(st.sampled_from(CLEAN), min_size=1, max_size=2).map(
        lambda parts: "/memories/" + "/".join(parts)), min_size=2, max_size=4))
    path = st.one_of(st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(pool),
                     st.sampled_from(pool).map(lambda p: p.rpartition("/")[0] or "/memories"),
                     edge_paths())
    text = st.one_of(TEXT, st.sampled_from(["", "line 1\nline 2\n", "a\r\nb", "ab\nab\n"]))
    return draw(st.lists(commands(path, text), min_size=1, max_size=max_size))


@st.composite
def commands(draw: Any, path: st.SearchStrategy[str], text: st.SearchStrategy[str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["view", "view", "create", "create", "create", "str_replace",
                                 "str_replace", "insert", "insert", "delete", "rename", "rename"]))
    if kind == "view":
        command: dict[str, Any] = {"command": "view", "path": draw(path)}
        if draw(st.booleans()):
            command["view_range"] = draw(st.lists(st.integers(-3, 6), min_size=0, max_size=3))
        return command
    if kind == "create":
        return {"command": "create", "path": draw(path), "file_text": draw(text)}
    if kind == "str_replace":
        return {"command": "str_replace", "path": draw(path),
                "old_str": draw(st.one_of(st.text(st.sampled_from(["a", "b", "\n", "é", "x"]), max_size=3),
                                         st.just("line"))),
                "new_str": draw(text)}
    if kind == "insert":
        return {"command": "insert", "path": draw(path), "insert_line": draw(st.integers(-1, 4)),
                "insert_text": draw(text)}
    if kind == "delete":
        return {"command": "delete", "path": draw(path)}
    return {"command": "rename", "old_path": draw(path), "new_path": draw(path)}


def outcome(tool: Any, command: dict[str, Any], root: Path | None = None) -> tuple[Any, ...]:
    """What a tool answered: its text, or its error as the tool runner would see it (a ToolError's
    message; another exception's repr, and for an OSError its message with the local tool's
    folder written as /memories)."""
    try:
        return ("ok", tool.call(command))
    except ToolError as err:
        return ("ToolError", err.content)
    except OSError as err:
        return ("OSError", repr(err), _local(str(err), root))
    except ValueError as err:
        return ("ValueError", repr(err))


async def async_outcome(tool: Any, command: dict[str, Any], root: Path | None = None) -> tuple[Any, ...]:
    try:
        return ("ok", await tool.call(command))
    except ToolError as err:
        return ("ToolError", err.content)
    except OSError as err:
        return ("OSError", repr(err), _local(str(err), root))
    except ValueError as err:
        return ("ValueError", repr(err))


def _local(message: str, root: Path | None) -> str:
    return message.replace(str(root.resolve()), "/memories") if root is not None else message


def snapshot_commands() -> list[dict[str, Any]]:
    """Views that show a whole memory: the listing, then every file named in it (an OSError or
    a hidden file is left to the command sequences)."""
    return [{"command": "view", "path": "/memories"}]
