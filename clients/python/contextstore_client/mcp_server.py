"""contextstore-mcp: the contextstore agent API as a Model Context Protocol server.

An MCP host (Claude Desktop, Cursor, VS Code, the OpenAI Agents SDK, ADK, LangGraph through
langchain-mcp-adapters) starts it over stdio, or reaches it over Streamable HTTP
(`--http HOST:PORT`); it talks to contextstore's REST API through this package's client, so it
imports nothing of the server. Configuration: `CONTEXTSTORE_URL` and `CONTEXTSTORE_TOKEN` (or
`--url` / `--token`); `--session-key` (with `--user-id`, `--agent`, `--thread`) names a default
thread, so a host can give an agent "its" thread without the agent knowing any id.

Tools (JSON-schema'd arguments, structured results; annotations say which ones write):
list_sessions, get_thread, get_context, append_events, search_events, remember, recall,
get_block, set_block, collapse, undo_collapse. An API error comes back as a tool error carrying
the API's message. Resources: contextstore://threads/{id}/context,
contextstore://threads/{id}/blocks/{name}, contextstore://sessions/{id}; a subscribed client
(`resources/subscribe`, or a `subscriptions/listen` stream on 2026-07-28) is told when one
changes, whoever changed it: the watcher polls the thread's revision and counters, its blocks'
versions or the session's counters, one cheap read per subscribed object and interval.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from typing import Annotated, Any, Literal, get_args
from urllib.parse import quote, unquote

from contextstore_client._mcp_command import MissingExtra

try:  # the [mcp] extra; without it the console script prints how to install it
    import anyio
    import anyio.to_thread
    import mcp.types as types
    from mcp.server.connection import Connection
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
    from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
    from mcp.shared.exceptions import MCPError
    from pydantic import Field
except ModuleNotFoundError as missing:
    raise MissingExtra(missing.name or "mcp") from missing

if sys.version_info >= (3, 12):
    from typing import Required, TypedDict
else:  # pydantic reads a TypedDict's fields only from typing_extensions' before 3.12
    from typing_extensions import Required, TypedDict

from contextstore_client import (
    AppendedEvent,
    Block,
    Collapse,
    Context,
    ContextStore,
    ContextStoreError,
    Event,
    Forbidden,
    Memory,
    NotFound,
    Session,
    Thread,
    ThreadHandle,
)

logger = logging.getLogger(__name__)

RESOURCE_URI = re.compile(
    r"^contextstore://(?:threads/(?P<thread>[0-9]+)/(?:(?P<context>context)|blocks/(?P<block>[^/]+))"
    r"|sessions/(?P<session>[0-9]+))$")

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
READS = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
# An append only adds; the other writes may replace what the model sees or a keyed memory
# (a person can undo each of them in the dashboard, but the agent cannot know that).
ADDS = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False)
REPLACES = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                 open_world_hint=False)
SETS = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                             open_world_hint=False)


# ------------------------------------------------------------------------------ shapes

class EventIn(TypedDict, total=False):
    """One event to append (the API's event input; see docs/api.md)."""

    type: Required[Annotated[str, Field(
        description="Message, ToolCall, ToolResult, Reasoning, Error, ... or any printable name "
                    "of at most 64 characters.")]]
    role: str
    content: str
    parts: list[Any] | None
    data: Any
    run_id: str | None
    call_id: str
    step: str
    anchor: str
    client_id: Annotated[str, Field(description="Makes the append idempotent (one is generated "
                                                "when missing).")]
    visible: bool | None
    occurred_at: Annotated[str, Field(description="ISO 8601; naive means UTC.")]


class SessionList(TypedDict):
    sessions: list[Session]
    more: Annotated[bool, Field(description="More sessions match than `limit`.")]


class EventList(TypedDict):
    events: list[Event]


class Appended(TypedDict):
    thread_id: int
    events: list[AppendedEvent]


class MemoryList(TypedDict):
    memories: list[Memory]


class ThreadContext(TypedDict):
    thread_id: int
    format: str
    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] | None
    stats: dict[str, Any]


ThreadId = Annotated[int | None, Field(
    description="The thread's id; leave it out for this server's default thread.")]


# ------------------------------------------------------------------------------ errors

def _describe(exc: ContextStoreError) -> str:
    text = exc.message
    places = {k: v for k, v in exc.details.items() if not (isinstance(v, str) and v in text)}
    if places:
        text += " " + json.dumps(places, ensure_ascii=False)
    return f"{text} ({exc.code}, HTTP {exc.status})" if exc.status else text


@contextmanager
def api_errors(tool: str, *, writes: bool = False) -> Iterator[None]:
    """The API's refusal as the tool's error: the model reads the API's own message."""
    try:
        yield
    except Forbidden as exc:
        if writes and exc.code == "scope":
            raise ToolError(f"{tool} changes contextstore and this server's token may only read: "
                            f"{_describe(exc)}") from exc
        raise ToolError(_describe(exc)) from exc
    except ContextStoreError as exc:
        raise ToolError(_describe(exc)) from exc


# ------------------------------------------------------------------------------ the tools

@dataclass
class Defaults:
    """The thread a host gives its agent: (user_id, session_key) and the thread's name."""

    session_key: str | None = None
    user_id: str = ""
    agent: str = ""
    thread: str = "main"


class Tools:
    """The tools and resources: a client call or two each, sync (the SDK runs them in a worker
    thread, and httpx's client is safe to share between threads)."""

    def __init__(self, store: ContextStore, defaults: Defaults):
        self.store = store
        self.defaults = defaults
        self._default_thread: int | None = None

    def thread_id(self, thread_id: int | None) -> int:
        if thread_id is not None:
            return thread_id
        if self._default_thread is None:
            with api_errors("finding the default thread"):
                self._default_thread = self._find_default_thread()
        return self._default_thread

    def _find_default_thread(self) -> int:
        d = self.defaults
        if d.session_key is None:
            raise ToolError("Give thread_id: this server has no default thread "
                            "(start it with --session-key to give the agent one).")
        try:
            return self.store.thread(d.session_key, user_id=d.user_id, agent=d.agent, name=d.thread).id
        except Forbidden:
            pass  # a read-scoped token may not create it: find it instead
        for session in self.store.iter_sessions(user_id=d.user_id, q=d.session_key):
            if session.key == d.session_key:
                for thread in self.store.session_threads(session.id):
                    if thread.name == d.thread:
                        return thread.id
        raise ToolError(f"The default thread {d.session_key}/{d.thread} does not exist yet, and "
                        "this server's token has read scope, so it cannot create it.")

    def handle(self, thread_id: int | None) -> ThreadHandle:
        """A handle on the thread without reading it: its calls need only the id."""
        return ThreadHandle(self.store, Thread(id=self.thread_id(thread_id), session=0,
                                               session_key="", name=""))

    # -- reads (each method is a tool: its signature is the schema, its docstring the description)

    def list_sessions(
        self,
        user_id: Annotated[str | None, Field(description="Only this end user's sessions.")] = None,
        agent: Annotated[str | None, Field(description="Only this agent's sessions.")] = None,
        q: Annotated[str | None, Field(description="Text in the key, user id, agent or title.")] = None,
        archived: Annotated[bool | None, Field(description="Only archived (true) or live (false).")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> SessionList:
        """List the workspace's sessions, oldest first, with their counters."""
        found: list[Session] = []
        with api_errors("list_sessions"):
            for session in self.store.iter_sessions(user_id=user_id, agent=agent, q=q, archived=archived):
                if len(found) == limit:
                    return {"sessions": found, "more": True}
                found.append(session)
        return {"sessions": found, "more": False}

    def get_thread(self, thread_id: ThreadId = None) -> Thread:
        """A thread: its session, revision, summary and counters (events, tokens)."""
        with api_errors("get_thread"):
            return self.store.get_thread(self.thread_id(thread_id)).thread

    def get_context(
        self,
        thread_id: ThreadId = None,
        max_tokens: Annotated[int | None, Field(ge=1, le=10_000_000, description=(
            "Token budget; default: the thread's model window minus its output reserve."))] = None,
        format: Literal["raw", "openai", "anthropic"] = "raw",
        strip_thinking: bool = False,
    ) -> ThreadContext:
        """What the model sees of the thread: prefix blocks, summary, the newest events that fit
        the budget, suffix blocks, with per-section token stats."""
        handle = self.handle(thread_id)
        with api_errors("get_context"):
            # Not recorded: reading stays a read (a record is a row, and needs write scope).
            rendered: Context = handle.context(max_tokens=max_tokens, format=format,
                                               strip_thinking=strip_thinking, record=False)
        return {"thread_id": handle.id, "format": rendered.format, "messages": rendered.messages,
                "system": rendered.system, "stats": rendered.stats}

    def search_events(
        self,
        thread_id: ThreadId = None,
        q: Annotated[str | None, Field(description="Case-insensitive text.")] = None,
        type: Annotated[list[str] | None, Field(description="Event types, any of.")] = None,
        regex: Annotated[str | None, Field(description="Case-insensitive regular expression.")] = None,
        run_id: str | None = None,
        after_seq: int | None = None,
        before_seq: int | None = None,
        status: Annotated[Literal["all", "active", "collapsed", "cleared", "reverted", "retracted",
                                  "replaced", "removed"] | None,
                          Field(description="Default: every status but removed and replaced.")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Keep only the newest matches.")] = 50,
    ) -> EventList:
        """Search the thread's history (oldest first): text, type, regex, run, seq range."""
        handle = self.handle(thread_id)
        with api_errors("search_events"):
            return {"events": handle.events(q=q, type=type, regex=regex, run_id=run_id, after_seq=after_seq,
                                            before_seq=before_seq, status=status, limit=limit)}

    def recall(
        self,
        q: Annotated[str | None, Field(description="Any of these words.")] = None,
        user_id: Annotated[str | None, Field(description="Default: the server's user.")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
    ) -> MemoryList:
        """Long-term memories about the end user, newest first."""
        with api_errors("recall"):
            return {"memories": self.store.recall(user_id=self._user(user_id), q=q, limit=limit)}

    def get_block(self, name: str, thread_id: ThreadId = None) -> Block:
        """A context block: its fixed value or live expression, placement and version."""
        handle = self.handle(thread_id)
        with api_errors("get_block"):
            blocks = handle.blocks()
        for block in blocks:
            if block.name == name:
                return block
        raise ToolError(f"Thread {handle.id} has no block named {name!r} "
                        f"(its blocks: {', '.join(repr(b.name) for b in blocks) or 'none'}).")

    # -- writes

    def append_events(
        self, events: Annotated[list[EventIn], Field(min_length=1)], thread_id: ThreadId = None,
    ) -> Appended:
        """Append events to the thread's history, in one transaction (replays of a client_id
        are not duplicated)."""
        handle = self.handle(thread_id)
        with api_errors("append_events", writes=True):
            appended = handle.append([dict(e) for e in events])
        return {"thread_id": handle.id, "events": appended}

    def remember(
        self,
        content: str,
        key: Annotated[str | None, Field(description="A memory with this key is replaced.")] = None,
        data: Any = None,
        user_id: Annotated[str | None, Field(description="Default: the server's user.")] = None,
    ) -> Memory:
        """Keep a long-term fact about the end user; it outlives sessions."""
        with api_errors("remember", writes=True):
            return self.store.remember(content, user_id=self._user(user_id) or "", key=key, data=data)

    def set_block(
        self,
        name: str,
        value: Annotated[str | None, Field(description="Fixed text; null (and no expr) "
                                                       "suppresses the block.")] = None,
        expr: Annotated[str | None, Field(description="A template over the thread's state, "
                                                      "evaluated at every render.")] = None,
        placement: Literal["prefix", "suffix"] | None = None,
        order: int | None = None,
        thread_id: ThreadId = None,
    ) -> Block:
        """Set a context block rendered into the prompt every turn (every version is kept)."""
        handle = self.handle(thread_id)
        with api_errors("set_block", writes=True):
            return handle.put_block(name, value=value, expr=expr, placement=placement, order=order)

    def collapse(
        self,
        start_position: Annotated[int, Field(ge=1)],
        end_position: Annotated[int, Field(ge=1)],
        summary_text: str,
        thread_id: ThreadId = None,
    ) -> Collapse:
        """Replace the events at positions start..end (both included; an event's position is its
        seq unless a collapse moved it) with one summary. The originals are kept."""
        handle = self.handle(thread_id)
        with api_errors("collapse", writes=True):
            return handle.collapse(start_position, end_position, summary_text)

    def undo_collapse(self, collapse_id: int) -> Collapse:
        """Bring a collapse's events back (one nesting level at a time)."""
        with api_errors("undo_collapse", writes=True):
            return self.store.undo_collapse(collapse_id)

    def _user(self, user_id: str | None) -> str | None:
        return self.defaults.user_id if user_id is None and self.defaults.session_key else user_id

    # -- resources

    def read(self, uri: str) -> str:
        """A resource's JSON text; the API's refusal as the resource error."""
        match = RESOURCE_URI.match(uri)
        if match is None:
            raise ResourceNotFoundError(f"Not a contextstore resource: {uri}")
        try:
            if match["session"]:
                session = self.store.session(int(match["session"]))
                return _json({"session": session, "threads": self.store.session_threads(session.id)})
            handle = self.handle(int(match["thread"]))
            if match["context"]:
                rendered = handle.context(record=False)
                return _json({"thread_id": handle.id, "messages": rendered.messages, "stats": rendered.stats})
            name = unquote(match["block"])
            for block in handle.blocks():
                if block.name == name:
                    return _json(block)
            raise ResourceNotFoundError(f"Thread {handle.id} has no block named {name!r}.")
        except NotFound as exc:
            raise ResourceNotFoundError(_describe(exc)) from exc
        except ContextStoreError as exc:
            raise ResourceError(_describe(exc)) from exc

    def fingerprint(self, uri: str, reads: dict[str, Any]) -> Any:
        """What says whether a resource changed: the thread's row (revision, counters,
        updated_at) and its blocks' versions, a block, or the session's row, each read at most
        once per poll (`reads`). A refusal (deleted, say) is a fingerprint too."""
        match = RESOURCE_URI.match(uri)
        if match is None:
            return None

        def get(path: str) -> Any:
            if path not in reads:
                try:
                    reads[path] = self.store.request("GET", path).json()
                except ContextStoreError as exc:
                    if not exc.status:
                        raise  # unreachable: keep the last fingerprint
                    reads[path] = {"error": exc.status}
            return reads[path]

        if match["session"]:
            return get(f"sessions/{match['session']}/")
        blocks = get(f"threads/{match['thread']}/blocks/")
        if match["context"]:
            return [get(f"threads/{match['thread']}/"), blocks]
        if "error" in blocks:
            return blocks
        return [b for b in blocks["results"] if b["name"] == unquote(match["block"])]


def _json(value: Any) -> str:
    return json.dumps(value, default=_plain, ensure_ascii=False)


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


# ------------------------------------------------------------------------------ subscriptions

class Watcher:
    """Tells subscribed clients when a resource changed, whoever changed it (the agent, another
    agent, a person in the dashboard, a summarizer): every `interval` seconds it reads the
    fingerprint of each subscribed resource and notifies on a difference. Clients of the
    handshake era subscribe with resources/subscribe (notified on their connection); 2026-07-28
    clients open a subscriptions/listen stream naming the URIs (notified through the bus)."""

    def __init__(self, tools: Tools, bus: InMemorySubscriptionBus, interval: float):
        self.tools = tools
        self.bus = bus
        self.interval = interval
        self.clients: dict[str, set[Connection]] = defaultdict(set)  # resources/subscribe
        self.streams: Counter[str] = Counter()
        self.seen: dict[str, Any] = {}

    def watched(self) -> list[str]:
        return [uri for uri in self.seen if self.clients.get(uri) or self.streams[uri]]

    async def start_watching(self, uri: str) -> None:
        """A resource's first subscriber: changes count from now."""
        if not (self.clients.get(uri) or self.streams[uri]):
            self.seen[uri] = await anyio.to_thread.run_sync(self.tools.fingerprint, uri, {})

    async def subscribe(self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
                        ) -> types.EmptyResult:
        uri = str(params.uri)
        if RESOURCE_URI.match(uri) is None:
            raise MCPError(types.INVALID_PARAMS, f"Not a contextstore resource: {uri}")
        try:  # refuse what cannot be read, with the API's reason
            await anyio.to_thread.run_sync(self.tools.read, uri)
        except ResourceError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from exc
        await self.start_watching(uri)
        connection = _connection(ctx)
        if not any(connection in clients for clients in self.clients.values()):
            connection.exit_stack.callback(self.forget, connection)
        self.clients[uri].add(connection)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
                          ) -> types.EmptyResult:
        self.clients[str(params.uri)].discard(_connection(ctx))
        return types.EmptyResult()

    def forget(self, connection: Connection) -> None:
        """A client has gone: its subscriptions with it."""
        for clients in self.clients.values():
            clients.discard(connection)

    async def listen(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: while a subscriptions/listen stream is open, watch the URIs it names."""
        if ctx.method != "subscriptions/listen":
            return await call_next(ctx)
        notifications = (ctx.params or {}).get("notifications") or {}
        uris = [u for u in notifications.get("resourceSubscriptions") or []
                if isinstance(u, str) and RESOURCE_URI.match(u)]
        for uri in uris:
            await self.start_watching(uri)
            self.streams[uri] += 1
        try:
            return await call_next(ctx)
        finally:
            self.streams.subtract(uris)

    async def run(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            try:
                await self.poll()
            except Exception:  # a poll must never end the watcher (the server is unreachable, say)
                logger.warning("polling contextstore for changes failed", exc_info=True)

    async def poll(self) -> None:
        uris = self.watched()
        if not uris:
            return
        reads: dict[str, Any] = {}
        for uri in uris:
            now = await anyio.to_thread.run_sync(self.tools.fingerprint, uri, reads)
            if now != self.seen[uri]:
                self.seen[uri] = now
                await self.notify(uri)

    async def notify(self, uri: str) -> None:
        for connection in list(self.clients.get(uri, ())):
            await connection.send_resource_updated(uri)  # best effort: never raises
        if self.streams[uri]:
            await self.bus.publish(ResourceUpdated(uri=uri))


def _connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The client connection a request came on: its ServerSession is made per request, and the
    SDK gives a low-level handler no public path to the connection."""
    connection: Connection = ctx.session._connection
    return connection


# ------------------------------------------------------------------------------ the server

INSTRUCTIONS = """contextstore keeps this agent's working memory: its thread of events, the
context blocks rendered into its prompt, and long-term memories about its user. A person may
be watching and editing the same thread in a dashboard. Thread tools take thread_id; without
one they use this server's default thread, if it has one."""


def build_server(store: ContextStore, defaults: Defaults | None = None, *, poll_interval: float = 2.0,
                 log_level: LogLevel = "WARNING") -> MCPServer[Any]:
    """The MCP server over `store`: tools, resources and the subscription watcher."""
    tools = Tools(store, defaults or Defaults())
    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
        async with anyio.create_task_group() as group:
            group.start_soon(watcher.run)
            yield {}
            group.cancel_scope.cancel()

    server: MCPServer[Any] = MCPServer("contextstore", instructions=INSTRUCTIONS, lifespan=lifespan,
                                       subscriptions=bus, log_level=log_level)
    watcher = Watcher(tools, bus, poll_interval)
    # MCPServer serves the 2026-07-28 subscriptions/listen itself; the handshake era's
    # resources/subscribe is a low-level handler (MCPServer has no decorator for it).
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, watcher.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, watcher.unsubscribe)
    server.middleware.append(watcher.listen)

    for tool, hints in (
            (tools.list_sessions, READS), (tools.get_thread, READS), (tools.get_context, READS),
            (tools.append_events, ADDS), (tools.search_events, READS), (tools.remember, REPLACES),
            (tools.recall, READS), (tools.get_block, READS), (tools.set_block, SETS),
            (tools.collapse, REPLACES), (tools.undo_collapse, REPLACES)):
        server.add_tool(tool, annotations=hints)

    @server.resource("contextstore://threads/{thread_id}/context", mime_type="application/json",
                     description="The thread's rendered context (messages and stats).")
    def thread_context(thread_id: str) -> str:
        return tools.read(f"contextstore://threads/{thread_id}/context")

    @server.resource("contextstore://threads/{thread_id}/blocks/{name}", mime_type="application/json",
                     description="One context block of the thread.")
    def thread_block(thread_id: str, name: str) -> str:
        return tools.read(f"contextstore://threads/{thread_id}/blocks/{quote(name, safe='')}")

    @server.resource("contextstore://sessions/{session_id}", mime_type="application/json",
                     description="A session and its threads.")
    def session(session_id: str) -> str:
        return tools.read(f"contextstore://sessions/{session_id}")

    return server


def _host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host.strip("[]"), int(port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="contextstore-mcp", description="contextstore's agent API as an MCP server (stdio by default).")
    parser.add_argument("--url", default=os.environ.get("CONTEXTSTORE_URL"),
                        help="the contextstore server (default: $CONTEXTSTORE_URL)")
    parser.add_argument("--token", default=os.environ.get("CONTEXTSTORE_TOKEN"),
                        help="a workspace API token (default: $CONTEXTSTORE_TOKEN); read scope "
                             "makes the write tools refuse")
    parser.add_argument("--session-key", help="the default thread's session key")
    parser.add_argument("--user-id", default="", help="the default session's end user (and memories')")
    parser.add_argument("--agent", default="", help="the agent name a new default session gets")
    parser.add_argument("--thread", default="main", help="the default thread's name (default: main)")
    parser.add_argument("--http", type=_host_port, metavar="HOST:PORT",
                        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--log-level", default="WARNING", choices=get_args(LogLevel),
                        help="what the server logs to stderr (default: WARNING)")
    parser.add_argument("--poll-interval", type=float, default=2.0, metavar="SECONDS",
                        help="how often subscribed resources are checked for changes (default: 2)")
    args = parser.parse_args(argv)
    if not args.url or not args.token:
        parser.error("give the server and a token: CONTEXTSTORE_URL and CONTEXTSTORE_TOKEN, "
                     "or --url and --token")
    defaults = Defaults(session_key=args.session_key, user_id=args.user_id, agent=args.agent,
                        thread=args.thread)
    try:
        store = ContextStore(args.url, args.token)
    except ValueError as refused:  # a token that cannot be one (spaces, a newline)
        parser.error(str(refused))
    with store:
        server = build_server(store, defaults, poll_interval=args.poll_interval, log_level=args.log_level)
        if args.http:
            host, port = args.http
            server.run("streamable-http", host=host, port=port)
        else:
            server.run()


if __name__ == "__main__":
    main()
