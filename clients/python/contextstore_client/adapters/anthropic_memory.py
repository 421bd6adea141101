"""Anthropic's memory tool (``memory_20250818``) kept in contextstore's long-term store.

    from contextstore_client import ContextStore
    from contextstore_client.adapters.anthropic_memory import ContextStoreMemoryTool

    memory = ContextStoreMemoryTool(ContextStore(url, token), user_id="ada")
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=..., tools=[memory], messages=[...])

``ContextStoreMemoryTool`` (blocking client) and ``AsyncContextStoreMemoryTool`` (asyncio client)
subclass the SDK's ``BetaAbstractMemoryTool`` / ``BetaAsyncAbstractMemoryTool`` and answer every
command (view of a directory or of a file with ``view_range``, create, str_replace, insert,
delete, rename) with the strings and errors of the SDK's own ``BetaLocalFilesystemMemoryTool``
on a local disk: the same ``ToolError`` messages, the same ``OSError`` (class, errno, message)
where the local tool lets one through, the same listing (two levels, hidden names left out,
sizes in bytes of UTF-8, a directory 4K as on ext4), paths resolved the same way (``..`` that
leaves /memories refused, ``%2e%2e`` an ordinary name).

The files are one user's items of the store: namespace ``["memories", user_id]`` (plus
``namespace`` when given), key the path under /memories (``notes/todo.md``), value
``{"content": <the file's text>}``. Directories are implied by the files in them; a directory
left empty (its last file deleted or moved away, or made by a rename) is kept as an item whose
key is its path and a "/" (``notes/``, value ``{"directory": true}``), as the local tool keeps
the empty folder. Every write is a version of the item a person can see and undo in the
dashboard; a rename moves the items, with their history.

Requests: view of a file, str_replace and insert read the file (one request) and write it (one);
everything else reads the user's files (one request per 1,000 files) and writes its changes in
one atomic batch. Two agents editing the same user's memory at once are as two processes on one
disk without locks: the last write wins.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from contextstore_client import AsyncContextStore, ContextStore, InvalidInput

__all__ = ["AsyncContextStoreMemoryTool", "ContextStoreMemoryTool", "memory_namespace"]

ROOT = "/memories"
MAX_LINES = 999999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
DIRECTORY_SIZE = 4096  # what ext4 reports for a directory, as the local tool lists it
PAGE = 1000

# A batch: the store ops one request sends; the answer is their results, in order.
Ops = list[dict[str, Any]]
Steps = Generator[Ops, list[Any], str]


def memory_namespace(user_id: str, namespace: str = "") -> list[str]:
    """The store namespace of one user's memory files."""
    return ["memories", user_id] + ([namespace] if namespace else [])


# --- the local tool's text (mirrors anthropic.lib.tools._beta_builtin_memory_tool) -----------

def _format_file_size(size: int) -> str:
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min(int(size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**i)
    return f"{int(scaled)}{units[i]}" if scaled == int(scaled) else f"{scaled:.1f}{units[i]}"


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines))


def _abs(rel: str) -> str:
    """A path as the local tool's OSErrors name it, with /memories for its folder."""
    return f"{ROOT}/{rel}" if rel else ROOT


def _os_error(code: int, first: str, second: str | None = None) -> OSError:
    # OSError picks the subclass from the errno (NotADirectoryError, ...), as os.* raise them.
    if second is None:
        return OSError(code, os.strerror(code), _abs(first))
    return OSError(code, os.strerror(code), _abs(first), None, _abs(second))


def resolve(path: str) -> str:
    """The path under /memories a command's path names ("" for /memories itself), resolved as
    the local tool resolves it on disk (Path.resolve: "." and ".." and repeated "/" folded)."""
    if not path.startswith(ROOT):
        raise ToolError(f"Path must start with /memories, got: {path}")
    if "\x00" in path:
        raise ValueError("embedded null byte")
    # The local tool's folder is <base>/memories: a ".." out of it reaches <base>, from where
    # only "memories" leads back in; a second ".." leaves for good.
    parts: list[str] | None = ["memories"]
    for part in path[len(ROOT):].lstrip("/").split("/"):
        if part in ("", ".") or parts is None:
            continue
        if part == "..":
            if parts:
                parts.pop()
            else:
                parts = None
        else:
            parts.append(part)
    if parts is None or parts[:1] != ["memories"]:
        raise ToolError(f"Path {path} would escape /memories directory")
    return "/".join(parts[1:])


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _ancestors(rel: str) -> list[str]:
    """The directories above a path, nearest first, /memories ("") left out."""
    out = []
    while "/" in rel:
        rel = _parent(rel)
        out.append(rel)
    return out


def _is_clean(key: str) -> bool:
    parts = key.split("/")
    return all(p not in ("", ".", "..") for p in parts)


# --- one user's files, as a little file system -----------------------------------------------

@dataclass
class Tree:
    """The files (path -> text) and directories of one user's memory, and which directories
    the store holds as an item of their own."""

    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    markers: set[str] = field(default_factory=set)

    @classmethod
    def from_items(cls, items: list[dict[str, Any]]) -> Tree:
        tree = cls()
        for item in items:
            key: str = item["key"]
            if key.endswith("/") and _is_clean(key[:-1]):
                tree.markers.add(key[:-1])
            elif _is_clean(key):
                tree.files[key] = _content(item["value"])
        for path in [*tree.files, *tree.markers]:
            tree.dirs.update(_ancestors(path))
        tree.dirs.update(m for m in tree.markers if m not in tree.files)
        tree.dirs -= tree.files.keys()
        return tree

    def kind(self, rel: str) -> str:
        """file, dir, missing, or notdir (a file stands where a directory above it should)."""
        if rel == "" or rel in self.dirs:
            return "dir"
        if rel in self.files:
            return "file"
        if any(a in self.files for a in _ancestors(rel)):
            return "notdir"
        return "missing"

    def exists(self, rel: str) -> bool:
        return self.kind(rel) in ("file", "dir")

    def mkdir_parents(self, rel: str) -> None:
        """_secure_mkdir(rel): every missing directory down to rel, from the top."""
        missing = []
        current = rel
        while not self.exists(current):
            missing.append(current)
            current = _parent(current)
        for directory in reversed(missing):
            if self.kind(_parent(directory)) != "dir":
                raise _os_error(errno.ENOTDIR, directory)
            self.dirs.add(directory)

    def children(self, rel: str) -> list[tuple[str, bool]]:
        """(name, is_dir) of what is directly in a directory, sorted by name."""
        prefix = rel + "/" if rel else ""
        names: dict[str, bool] = {}
        for path in self.files:
            if path.startswith(prefix) and "/" not in path[len(prefix):]:
                names[path[len(prefix):]] = False
        for path in self.dirs:
            if path.startswith(prefix) and path != rel and "/" not in path[len(prefix):]:
                names[path[len(prefix):]] = True
        return sorted(names.items())

    def below(self, rel: str) -> tuple[list[str], list[str]]:
        """The files and directories inside a directory, at any depth."""
        prefix = rel + "/"
        return ([p for p in self.files if p.startswith(prefix)],
                [d for d in self.dirs if d.startswith(prefix)])

    def empty_dirs(self) -> set[str]:
        """The directories nothing is in: the ones the store keeps as items."""
        occupied = set()
        for path in [*self.files, *self.dirs]:
            occupied.update(_ancestors(path))
        return self.dirs - occupied


def _content(value: Any) -> str:
    text = value.get("content") if isinstance(value, dict) else None
    if isinstance(text, str):
        return text
    return json.dumps(value, ensure_ascii=False)  # an item a person or another tool wrote


# --- the commands, written once for both tools -----------------------------------------------

class _Memory:
    """The commands as steps: each yields the store ops of one request and gets their results."""

    def __init__(self, user_id: str, namespace: str) -> None:
        if not isinstance(user_id, str) or not user_id:
            raise ValueError("user_id must be a non-empty string")
        self.ns = memory_namespace(user_id, namespace)

    def _get(self, rel: str) -> dict[str, Any]:
        return {"op": "get", "namespace": self.ns, "key": rel, "refresh_ttl": False}

    def _put(self, rel: str, value: dict[str, Any] | None) -> dict[str, Any]:
        return {"op": "put", "namespace": self.ns, "key": rel, "value": value}

    def load(self) -> Generator[Ops, list[Any], Tree]:
        items: list[dict[str, Any]] = []
        offset = 0
        while True:
            [page] = yield [{"op": "search", "namespace_prefix": self.ns, "limit": PAGE,
                             "offset": offset, "refresh_ttl": False}]
            items += [i for i in page if i["namespace"] == self.ns]
            if len(page) < PAGE:
                return Tree.from_items(items)
            offset += PAGE

    def _file(self, rel: str) -> Generator[Ops, list[Any], tuple[str | None, Tree | None]]:
        """A file's text in one request when it is there; else the tree, to tell why not."""
        if rel:
            [item] = yield [self._get(rel)]
            if item is not None:
                return _content(item["value"]), None
        tree = yield from self.load()
        return (tree.files[rel] if tree.kind(rel) == "file" else None), tree

    def _save(self, before: Tree, after: Tree, moved: dict[str, str] | None = None) -> Ops:
        """The ops that turn the stored `before` into `after` (renames as moves)."""
        moved = moved or {}
        ops: Ops = [{"op": "move", "namespace": self.ns, "key": old, "new_key": new}
                    for old, new in moved.items()]
        gone = set(moved)
        for path in before.files.keys() - after.files.keys() - gone:
            ops.append(self._put(path, None))
        sources = {new: old for old, new in moved.items()}
        for path, text in after.files.items():
            if before.files.get(sources.get(path, path)) != text:
                ops.append(self._put(path, {"content": text}))
        markers = after.empty_dirs()
        ops += [self._put(d + "/", None) for d in sorted(before.markers - markers)]
        ops += [self._put(d + "/", {"directory": True}) for d in sorted(markers - before.markers)]
        return ops

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> Steps:
        path = command.path
        rel = resolve(path)
        content, tree = yield from self._file(rel)
        if content is None:
            assert tree is not None
            if tree.kind(rel) != "dir":
                raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
            return self._listing(tree, rel, path)
        lines = content.split("\n")
        if len(lines) > MAX_LINES:
            raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
        shown, start = lines, 1
        if command.view_range and len(command.view_range) == 2:
            first = max(1, command.view_range[0]) - 1
            end = len(lines) if command.view_range[1] == -1 else command.view_range[1]
            shown, start = lines[first:end], first + 1
        return f"Here's the content of {path} with line numbers:\n" + _numbered(shown, start)

    @staticmethod
    def _listing(tree: Tree, rel: str, path: str) -> str:
        items: list[tuple[str, str]] = []

        def collect(directory: str, shown: str, depth: int) -> None:
            for name, is_dir in tree.children(directory):
                if name.startswith("."):
                    continue
                inner = f"{directory}/{name}" if directory else name
                label = f"{shown}/{name}" if shown else name
                if is_dir:
                    items.append((_format_file_size(DIRECTORY_SIZE), f"{label}/"))
                    if depth < 2:
                        collect(inner, label, depth + 1)
                else:
                    items.append((_format_file_size(len(tree.files[inner].encode("utf-8"))), label))

        collect(rel, "", 1)
        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        lines = [f"{_format_file_size(DIRECTORY_SIZE)}\t{path}"]
        lines += [f"{size}\t{path}/{label}" for size, label in items]
        return f"{header}\n" + "\n".join(lines)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> Steps:
        rel = resolve(command.path)
        before = yield from self.load()
        after = _copy(before)
        failure: BaseException | None = None
        try:
            after.mkdir_parents(_parent(rel) if rel else "")
            kind = after.kind(rel)
            if kind == "notdir":
                raise _os_error(errno.ENOTDIR, rel)
            if kind != "missing":
                raise ToolError(f"File {command.path} already exists")
            after.files[rel] = command.file_text
        except (ToolError, OSError) as err:
            failure = err
        yield from self._write(before, after)
        if failure is not None:
            raise failure
        return f"File created successfully at: {command.path}"

    def _edit(self, path: str) -> Generator[Ops, list[Any], tuple[str, str]]:
        rel = resolve(path)
        content, tree = yield from self._file(rel)
        if content is None:
            assert tree is not None
            if not tree.exists(rel):
                raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
            raise ToolError(f"The path {path} is not a file.")
        return rel, content

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> Steps:
        path, old, new = command.path, command.old_str, command.new_str
        rel, content = yield from self._edit(path)
        count = content.count(old)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if count > 1:
            matching: list[int] = []
            start = 0
            while (pos := content.find(old, start)) != -1:
                matching.append(content[:pos].count("\n") + 1)
                start = pos + 1
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                f"{', '.join(map(str, matching))}. Please ensure it is unique")
        changed = content[:content.find(old)].count("\n")
        new_content = content.replace(old, new)
        yield from self._send([self._put(rel, {"content": new_content})])
        new_lines = new_content.split("\n")
        first, end = max(0, changed - 2), min(len(new_lines), changed + 3)
        return ("The memory file has been edited. Here is the snippet showing the change "
                "(with line numbers):\n" + _numbered(new_lines[first:end], first + 1))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> Steps:
        rel, content = yield from self._edit(command.path)
        lines = _split_lines_keeping_cr(content)
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(f"Invalid `insert_line` parameter: {command.insert_line}. "
                            f"It should be within the range [0, {len(lines)}].")
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        if not new_content.endswith("\n"):
            new_content += "\n"
        yield from self._send([self._put(rel, {"content": new_content})])
        return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> Steps:
        rel = resolve(command.path)
        if rel == "":
            raise ToolError("Cannot delete the /memories directory itself")
        before = yield from self.load()
        after = _copy(before)
        kind = after.kind(rel)
        if kind == "file":
            del after.files[rel]
        elif kind == "dir":
            files, dirs = after.below(rel)
            for path in files:
                del after.files[path]
            after.dirs -= {rel, *dirs}
        else:
            raise ToolError(f"The path {command.path} does not exist")
        yield from self._write(before, after)
        return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> Steps:
        old, new = resolve(command.old_path), resolve(command.new_path)
        if old == "":
            raise ToolError("Cannot rename the /memories directory itself")
        before = yield from self.load()
        if before.exists(new):
            raise ToolError(f"The destination {command.new_path} already exists")
        after = _copy(before)
        moved: dict[str, str] = {}
        failure: BaseException | None = None
        try:
            after.mkdir_parents(_parent(new))
            moved = _rename(after, old, new, command.old_path)
        except (ToolError, OSError) as err:
            failure = err
        yield from self._write(before, after, moved)
        if failure is not None:
            raise failure
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    def clear_all_memory(self) -> Steps:
        before = yield from self.load()
        yield from self._write(before, Tree())
        return "All memory cleared"

    def _write(self, before: Tree, after: Tree,
               moved: dict[str, str] | None = None) -> Generator[Ops, list[Any], None]:
        ops = self._save(before, after, moved)
        if ops:
            yield from self._send(ops)

    def _send(self, ops: Ops) -> Generator[Ops, list[Any], list[Any]]:
        return (yield ops)


def _copy(tree: Tree) -> Tree:
    return Tree(dict(tree.files), set(tree.dirs), set(tree.markers))


def _walk_error(tree: Tree, rel: str) -> int | None:
    """The errno a lookup of rel's parent directories fails with (os.rename's), if any."""
    for directory in reversed(_ancestors(rel)):
        kind = tree.kind(directory)
        if kind == "file":
            return errno.ENOTDIR
        if kind != "dir":
            return errno.ENOENT
    return None


def _rename(tree: Tree, old: str, new: str, old_path: str) -> dict[str, str]:
    """os.rename(old, new) on the tree (new is known not to exist); the files it moved."""
    for code in (_walk_error(tree, old), _walk_error(tree, new)):
        if code == errno.ENOTDIR:
            raise _os_error(code, old, new)
        if code == errno.ENOENT:
            raise ToolError(f"The path {old_path} does not exist")
    kind = tree.kind(old)
    if kind == "missing":
        raise ToolError(f"The path {old_path} does not exist")
    if kind == "file":
        tree.files[new] = tree.files.pop(old)
        return {old: new}
    if new.startswith(old + "/"):
        raise _os_error(errno.EINVAL, old, new)
    files, dirs = tree.below(old)
    moved = {path: new + path[len(old):] for path in files}
    for path, target in moved.items():
        tree.files[target] = tree.files.pop(path)
    tree.dirs -= {old, *dirs}
    tree.dirs |= {new, *(new + d[len(old):] for d in dirs)}
    return moved


class ContextStoreMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over the blocking client: one user's files in contextstore."""

    def __init__(self, client: ContextStore, *, user_id: str, namespace: str = "",
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.client = client
        self._memory = _Memory(user_id, namespace)

    def _run(self, steps: Steps) -> str:
        answer: list[Any] | None = None
        while True:
            try:
                ops = steps.send(answer)  # type: ignore[arg-type]  # None starts the generator
            except StopIteration as done:
                result: str = done.value
                return result
            try:
                answer = self.client.store_batch(ops)
            except InvalidInput as err:
                raise ToolError(str(err)) from err

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self._memory.view(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self._memory.create(command))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(self._memory.str_replace(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(self._memory.insert(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self._memory.delete(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self._memory.rename(command))

    def clear_all_memory(self) -> str:
        return self._run(self._memory.clear_all_memory())


class AsyncContextStoreMemoryTool(BetaAsyncAbstractMemoryTool):
    """The memory tool over the asyncio client: one user's files in contextstore."""

    def __init__(self, client: AsyncContextStore, *, user_id: str, namespace: str = "",
                 cache_control: BetaCacheControlEphemeralParam | None = None) -> None:
        super().__init__(cache_control=cache_control)
        self.client = client
        self._memory = _Memory(user_id, namespace)

    async def _run(self, steps: Steps) -> str:
        answer: list[Any] | None = None
        while True:
            try:
                ops = steps.send(answer)  # type: ignore[arg-type]  # None starts the generator
            except StopIteration as done:
                result: str = done.value
                return result
            try:
                answer = await self.client.store_batch(ops)
            except InvalidInput as err:
                raise ToolError(str(err)) from err

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(self._memory.view(command))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(self._memory.create(command))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(self._memory.str_replace(command))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(self._memory.insert(command))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(self._memory.delete(command))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(self._memory.rename(command))

    async def clear_all_memory(self) -> str:
        return await self._run(self._memory.clear_all_memory())
