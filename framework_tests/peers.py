"""bench_peers' driver: one framework's own PostgreSQL store (the peer) against our adapter
over HTTP, the same calls in turns, on the same database. Run inside the framework's
virtualenv by `manage.py bench_peers` (contextstore/bench/peers.py), which reads the JSON it
prints last:

    python -m framework_tests.peers adk|langgraph|openai-agents|openai-conversations[-sqlite]

Environment: CONTEXTSTORE_URL and CONTEXTSTORE_TOKEN (ours), PEERS_DSN (the database, as
postgresql://user:password@host:port/name), PEERS_SMALL and PEERS_LARGE (history sizes at which
writes are timed), PEERS_SAMPLES (writes timed at each size), PEERS_READS (reads timed).

Each write call is timed on both stores in turns (which store goes first alternates), as the
history grows from 0 to PEERS_LARGE; a write "at N" is one of the PEERS_SAMPLES writes just
before the history reaches N. Reads are timed at PEERS_LARGE, also in turns. Bytes per event
are the growth of each store's tables (pg_total_relation_size: heap, TOAST and indexes) over
the fill, divided by the events it wrote: the peer's tables by name, ours those named
contextstore_*.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import operator
import os
import re
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

URL, TOKEN = os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"]
DSN = os.environ["PEERS_DSN"]
SMALL, LARGE = int(os.environ.get("PEERS_SMALL", "100")), int(os.environ.get("PEERS_LARGE", "2000"))
SAMPLES, READS = int(os.environ.get("PEERS_SAMPLES", "30")), int(os.environ.get("PEERS_READS", "10"))
TAG = uuid.uuid4().hex[:8]
BODY = " ".join(["context"] * 56)  # about 60 words, like a chat turn (as bench_api's)
SIDES = ("peer", "ours")

SIZE_SQL = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND n.nspname = current_schema() AND {where}"""
OURS_WHERE = r"c.relname LIKE 'contextstore\_%'"
# By relation: each table (heap and TOAST) and each of its indexes, ours (contextstore_*) and the
# peer's (its tables, {peer}: a condition on the table's name as `r`), the peer's named "peer:…".
PARTS_SQL = r"""SELECT CASE WHEN {peer} THEN 'peer:' ELSE '' END || c.relname, (pg_relation_size(c.oid)
        + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0))::bigint
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
    CROSS JOIN LATERAL (SELECT CASE c.relkind WHEN 'r' THEN c.relname WHEN 'i' THEN t.relname END
                        AS relname) r
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')
        AND (r.relname LIKE 'contextstore\_%' OR {peer})"""


def parts_grown(before: dict[str, int], after: dict[str, int], counts: dict[str, int]) -> dict[str, float]:
    """Bytes per event (item, checkpoint) each relation grew by, the largest first: ours, and
    the peer's named "peer:<relation>" (per the peer's own count)."""
    grown = {name: (size - before.get(name, 0))
             / max(counts["peer" if name.startswith("peer:") else "ours"], 1)
             for name, size in after.items()}
    return dict(sorted(((n, g) for n, g in grown.items() if g > 0), key=lambda p: -p[1]))


def tables_where(names: tuple[str, ...], alias: str = "c") -> str:
    return "{}.relname IN ({})".format(alias, ", ".join(f"'{n}'" for n in names))


def parts_sql(peer_tables: tuple[str, ...]) -> str:
    """Both stores' relations by name, for parts_grown."""
    return PARTS_SQL.format(peer=tables_where(peer_tables, "r"))


def p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def async_url(driver: str) -> str:
    return DSN.replace("postgresql://", f"postgresql+{driver}://", 1)


TIMING = re.compile(r"app;dur=([\d.]+), db;dur=([\d.]+)")


class ServerTime:
    """What our server said each request cost it (its Server-Timing header: the request's ms in
    Django, and of them in SQL), by when the answer came: a call's share is what came while it
    ran. bench_peers starts the server with SERVER_TIMING on."""

    def __init__(self) -> None:
        self.at: list[float] = []
        self.ms: list[tuple[float, float, int]] = []

    def seen(self, headers: Any) -> None:
        if found := TIMING.match(headers.get("Server-Timing", "")):
            self.at.append(time.perf_counter())
            self.ms.append((float(found[1]), float(found[2]), threading.get_ident()))

    def since(self, began: float, this_thread: bool = False) -> tuple[float, float, int]:
        """(Django ms, SQL ms, requests) of the answers since `began`; `this_thread`: only those
        to this thread's requests (a graph step writes its checkpoints from other threads)."""
        mine = [m for m in self.ms[bisect.bisect_left(self.at, began):]
                if not this_thread or m[2] == threading.get_ident()]
        return sum(m[0] for m in mine), sum(m[1] for m in mine), len(mine)


SERVER = ServerTime()


def transport(kind: str) -> Any:
    """An httpx transport for our client ("sync" or "async") that notes each answer's
    Server-Timing."""
    import httpx

    class Sync(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = super().handle_request(request)
            SERVER.seen(response.headers)
            return response

    class Async(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await super().handle_async_request(request)
            SERVER.seen(response.headers)
            return response

    return Sync() if kind == "sync" else Async()


def hop() -> dict[str, float]:
    """The HTTP hop alone, from this process: GET /healthz on one keep-alive connection (plain
    httpx), p50 of the round trip and of the server's share of it."""
    import httpx

    with httpx.Client(base_url=URL, transport=transport("sync")) as http:
        rounds, server = [], []
        for i in range(60):
            began = time.perf_counter()
            http.get("/healthz").raise_for_status()
            if i >= 10:
                rounds.append((time.perf_counter() - began) * 1000)
                server.append(SERVER.since(began)[0])
    return {"round_trip": p50(rounds), "server": p50(server)}


class Timings:
    """Latencies (ms) per (call, side), ours split by what the server said it spent, and the
    table rows bench_peers prints."""

    def __init__(self) -> None:
        self.ms: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.server: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
        self.rows: list[dict[str, Any]] = []

    def add(self, call: str, side: str, began: float, this_thread: bool = False) -> None:
        self.ms[call, side].append((time.perf_counter() - began) * 1000)
        if side == "ours":
            self.server[call].append(SERVER.since(began, this_thread))

    def row(self, call: str, *, target: bool) -> None:
        """A row from the latencies of `call` on both sides; `target`: ours must be at most the
        peer's. Ours is split into the server's time (Django, of it SQL) and the rest (the
        client's work and the HTTP hops), each a p50 over the calls."""
        server = self.server[call]
        self.rows.append({"call": call, "peer": p50(self.ms[call, "peer"]),
                          "ours": p50(self.ms[call, "ours"]), "target": target,
                          "samples": len(self.ms[call, "ours"]),
                          "server": p50([s[0] for s in server]), "sql": p50([s[1] for s in server]),
                          "requests": statistics.median_low([s[2] for s in server]),
                          "rest": p50([total - s[0] for total, s in
                                       zip(self.ms[call, "ours"], server, strict=True)])})


def window(n: int) -> str | None:
    """The size a write made when the history held `n` events belongs to, if timed."""
    for size in (SMALL, LARGE):
        if size - SAMPLES <= n < size:
            return f"{size:,}"
    return None


def order(i: int) -> tuple[str, str]:
    return SIDES if i % 2 == 0 else SIDES[::-1]


async def in_turns(timings: Timings, call: str, calls: dict[str, Callable[[], Awaitable[Any]]],
                   count: int) -> None:
    for i in range(count):
        for side in order(i):
            began = time.perf_counter()
            await calls[side]()
            timings.add(call, side, began)


def result(framework: str, timings: Timings, unit: str, grown: dict[str, int],
           counts: dict[str, int], parts: dict[str, float]) -> dict[str, Any]:
    return {"framework": framework, "rows": timings.rows, "unit": unit, "hop": hop(), "parts": parts,
            "bytes": {side: grown[side] / max(counts[side], 1) for side in SIDES}, "counts": counts}


# ----------------------------------------------------------------------------- Google ADK

async def adk() -> dict[str, Any]:
    import asyncpg
    from contextstore_client import AsyncContextStore
    from contextstore_client.adapters.adk import ContextStoreSessionService
    from google.adk.events.event import Event
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.genai import types

    peer_tables = ("sessions", "events", "app_states", "user_states")
    peer_where, parts_query = tables_where(peer_tables), parts_sql(peer_tables)
    db = await asyncpg.connect(DSN)
    client = AsyncContextStore(URL, TOKEN, transport=transport("async"))
    stores = {"peer": DatabaseSessionService(db_url=async_url("asyncpg")),
              "ours": ContextStoreSessionService(client, namespace=TAG)}
    app, user, timings = "bench", "user-1", Timings()

    def create(side: str) -> Callable[[], Awaitable[Any]]:
        return lambda: stores[side].create_session(app_name=app, user_id=user)

    await in_turns(timings, "warm-up", {side: create(side) for side in SIDES}, 3)
    await in_turns(timings, "create_session", {side: create(side) for side in SIDES}, SAMPLES)
    timings.row("create_session", target=True)
    sessions = {side: await stores[side].create_session(app_name=app, user_id=user, session_id=f"main-{TAG}")
                for side in SIDES}
    before = {"peer": await db.fetchval(SIZE_SQL.format(where=peer_where)),
              "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE))}
    parts_before = dict(list(r) for r in await db.fetch(parts_query))
    for n in range(LARGE):
        for side in order(n):
            event = Event(invocation_id=f"run-{n // 2}", author="user" if n % 2 == 0 else "helper",
                          content=types.Content(role="user" if n % 2 == 0 else "model",
                                                parts=[types.Part(text=f"turn {n}: {BODY}")]))
            began = time.perf_counter()
            await stores[side].append_event(sessions[side], event)
            if (size := window(n)) is not None:
                timings.add(f"append_event @{size}", side, began)
    grown = {"peer": await db.fetchval(SIZE_SQL.format(where=peer_where)) - before["peer"],
             "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE)) - before["ours"]}
    parts_after = dict(list(r) for r in await db.fetch(parts_query))
    for size in (SMALL, LARGE):
        timings.row(f"append_event @{size:,}", target=True)

    def read(side: str, config: GetSessionConfig | None) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            found = await stores[side].get_session(app_name=app, user_id=user, session_id=f"main-{TAG}",
                                                   config=config)
            assert found is not None and len(found.events) == (config.num_recent_events if config
                                                                 else LARGE)
        return call

    full, recent = f"get_session @{LARGE:,}", f"get_session(num_recent_events=50) @{LARGE:,}"
    await in_turns(timings, full, {side: read(side, None) for side in SIDES}, READS)
    timings.row(full, target=True)
    config = GetSessionConfig(num_recent_events=min(50, LARGE))
    await in_turns(timings, recent, {side: read(side, config) for side in SIDES}, READS)
    timings.row(recent, target=False)
    await client.aclose()
    await db.close()
    return result("adk", timings, "event", grown, {side: LARGE for side in SIDES},
                  parts_grown(parts_before, parts_after, {side: LARGE for side in SIDES}))


# ----------------------------------------------------------------------------- LangGraph

class Step(TypedDict):
    question: str
    answer: str
    turns: Annotated[int, operator.add]


def langgraph() -> dict[str, Any]:
    import psycopg
    from contextstore_client import ContextStore
    from contextstore_client.adapters.langgraph import ContextStoreSaver
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row

    peer_tables = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
    peer_where, parts_query = tables_where(peer_tables), parts_sql(peer_tables)
    db = psycopg.connect(DSN, autocommit=True)
    conn = psycopg.connect(DSN, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    client = ContextStore(URL, TOKEN, transport=transport("sync"))
    savers = {"peer": PostgresSaver(conn), "ours": ContextStoreSaver(client, namespace=TAG)}
    savers["peer"].setup()
    timings = Timings()
    puts = {side: 0 for side in SIDES}  # checkpoints written so far

    def timed(side: str, method: str) -> None:
        original = getattr(savers[side], method)

        def call(*args: Any, **kwargs: Any) -> Any:
            n, began = puts[side], time.perf_counter()
            answer = original(*args, **kwargs)
            if (size := window(n)) is not None:
                timings.add(f"{method} @{size}", side, began, this_thread=True)
            if method == "put":
                puts[side] += 1
            return answer

        setattr(savers[side], method, call)

    for side in SIDES:
        timed(side, "put")
        timed(side, "put_writes")

    def respond(state: Step) -> dict[str, Any]:
        return {"answer": f"turn {state['turns']}: {BODY}", "turns": 1}

    builder = StateGraph(Step)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    graphs = {side: builder.compile(checkpointer=savers[side]) for side in SIDES}
    config: Any = {"configurable": {"thread_id": f"thread-{TAG}"}}

    def sizes() -> dict[str, int]:
        with db.cursor() as cursor:
            return {side: cursor.execute(SIZE_SQL.format(where=where)).fetchone()[0]  # type: ignore[index]
                    for side, where in (("peer", peer_where), ("ours", OURS_WHERE))}

    def parts() -> dict[str, int]:
        with db.cursor() as cursor:
            return dict(cursor.execute(parts_query).fetchall())  # type: ignore[arg-type]

    before, parts_before = sizes(), parts()
    step = 0
    while min(puts.values()) < LARGE:
        for side in order(step):
            n, began = puts[side], time.perf_counter()
            graphs[side].invoke({"question": f"question {step}: {BODY}"}, config, durability="sync")
            if (size := window(n)) is not None:
                timings.add(f"graph step @{size}", side, began)
        step += 1
    grown = {side: after - before[side] for side, after in sizes().items()}
    parts_after = parts()
    for size in (SMALL, LARGE):
        for call in ("put", "put_writes", "graph step"):
            timings.row(f"{call} @{size:,}", target=True)

    def read(side: str, limit: int | None) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            if limit == 1:
                assert savers[side].get_tuple(config) is not None
            else:
                assert len(list(savers[side].list(config, limit=limit))) == (limit or puts[side])
        return call

    for call, limit in ((f"get_tuple @{LARGE:,}", 1), (f"list (all) @{LARGE:,}", None),
                        (f"list(limit=20) @{LARGE:,}", 20)):
        asyncio.run(in_turns(timings, call, {side: read(side, limit) for side in SIDES}, READS))
        timings.row(call, target=limit is None or limit == 1)
    chat(savers, timings)
    client.close()
    conn.close()
    db.close()
    return result("langgraph", timings, "checkpoint", grown, puts,
                  parts_grown(parts_before, parts_after, puts))


def chat(savers: dict[str, Any], timings: Timings) -> None:
    """A chat's checkpoints: the state's messages channel holds SMALL, then LARGE LangChain
    messages and each put adds a turn (two), as add_messages does, so a checkpoint's size
    follows the conversation (the graph above keeps it constant). put then get_tuple, in turns,
    SAMPLES of each after three puts that record the conversation's earlier messages."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    warm = 3
    for size in (SMALL, LARGE):
        said = [(HumanMessage if i % 2 == 0 else AIMessage)(f"turn {i}: {BODY}", id=f"{TAG}-{size}-{i}")
                for i in range(size + 2 * (SAMPLES + warm))]
        configs: dict[str, Any] = {side: {"configurable": {"thread_id": f"chat-{size}-{TAG}",
                                                         "checkpoint_ns": ""}} for side in SIDES}
        for i in range(SAMPLES + warm):
            checkpoint = empty_checkpoint()
            checkpoint["id"] = str(uuid6(clock_seq=-1))
            checkpoint["channel_values"] = {"messages": said[:size + 2 * i]}
            checkpoint["channel_versions"] = {"messages": i + 1}
            for side in order(i):
                saver = savers[side]
                began = time.perf_counter()  # the class's put: not counted as the graph's puts
                configs[side] = type(saver).put(saver, configs[side], checkpoint,
                                                {"source": "loop", "step": i}, {"messages": i + 1})
                if i >= warm:
                    timings.add(f"put, {size:,} messages", side, began)
                began = time.perf_counter()
                found = saver.get_tuple(configs[side])
                if i >= warm:
                    timings.add(f"get_tuple, {size:,} messages", side, began)
                assert len(found.checkpoint["channel_values"]["messages"]) == size + 2 * i
    for size in (SMALL, LARGE):
        timings.row(f"put, {size:,} messages", target=True)
    for size in (SMALL, LARGE):
        timings.row(f"get_tuple, {size:,} messages", target=True)


# ----------------------------------------------------------------------------- OpenAI Agents SDK

def agent_items(n: int) -> list[dict[str, Any]]:
    """One turn's items: the user's message, the model's tool call and the tool's output."""
    call_id = f"call-{TAG}-{n}"
    return [
        {"role": "user", "content": f"question {n}: {BODY}"},
        {"type": "function_call", "call_id": call_id, "name": "lookup",
         "arguments": json.dumps({"query": f"turn {n}"}), "id": f"fc-{n}"},
        {"type": "function_call_output", "call_id": call_id, "output": f"answer {n}: {BODY}"},
    ]


async def openai_agents() -> dict[str, Any]:
    import asyncpg
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from contextstore_client import AsyncContextStore
    from contextstore_client.adapters.openai_agents import ContextStoreSession

    peer_tables = ("agent_sessions", "agent_messages")
    peer_where, parts_query = tables_where(peer_tables), parts_sql(peer_tables)
    db = await asyncpg.connect(DSN)
    client = AsyncContextStore(URL, TOKEN, transport=transport("async"))
    session_id = f"conversation-{TAG}"
    sessions = {"peer": SQLAlchemySession.from_url(session_id, url=async_url("asyncpg"), create_tables=True),
                "ours": ContextStoreSession(session_id, client, namespace=TAG)}
    for side in SIDES:  # the peer makes its tables on its first call
        assert await sessions[side].get_items() == []
    timings = Timings()
    before = {"peer": await db.fetchval(SIZE_SQL.format(where=peer_where)),
              "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE))}
    parts_before = dict(list(r) for r in await db.fetch(parts_query))
    items = {side: 0 for side in SIDES}
    turn = 0
    while min(items.values()) < LARGE:
        for side in order(turn):
            n, began = items[side], time.perf_counter()
            await sessions[side].add_items(agent_items(turn))  # type: ignore[arg-type]
            if (size := window(n)) is not None:
                timings.add(f"add_items(3) @{size}", side, began)
            items[side] += 3
        turn += 1
    grown = {"peer": await db.fetchval(SIZE_SQL.format(where=peer_where)) - before["peer"],
             "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE)) - before["ours"]}
    parts_after = dict(list(r) for r in await db.fetch(parts_query))
    for size in (SMALL, LARGE):
        timings.row(f"add_items(3) @{size:,}", target=True)

    def read(side: str, limit: int | None) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            got = await sessions[side].get_items(limit)
            assert len(got) == (limit or items[side])
        return call

    for call, limit in ((f"get_items @{LARGE:,}", None), (f"get_items(limit=20) @{LARGE:,}", 20)):
        await in_turns(timings, call, {side: read(side, limit) for side in SIDES}, READS)
        timings.row(call, target=limit is None)
    await client.aclose()
    await db.close()
    return result("openai-agents", timings, "item", grown, items,
                  parts_grown(parts_before, parts_after, items))


# ---------------------------------------------------- OpenAI Conversations (OpenAIConversationsSession)

async def openai_conversations(peer_kind: str) -> dict[str, Any]:
    """The Agents SDK's OpenAIConversationsSession against our /openai/v1 (the official AsyncOpenAI
    client) vs the SDK's reference stores: SQLAlchemySession on this PostgreSQL (`sqlalchemy`) or
    SQLiteSession on a file (`sqlite`). Writes, reads and pop_item as openai_agents times them."""
    import tempfile

    import asyncpg
    import httpx
    from agents import SQLiteSession
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from agents.memory.openai_conversations_session import OpenAIConversationsSession
    from openai import AsyncOpenAI

    db = await asyncpg.connect(DSN)
    folder = tempfile.TemporaryDirectory()
    sqlite_path = os.path.join(folder.name, "sessions.db")
    session_id = f"conversation-{TAG}"
    peer = (SQLAlchemySession.from_url(session_id, url=async_url("asyncpg"), create_tables=True)
            if peer_kind == "sqlalchemy" else SQLiteSession(session_id, sqlite_path))
    api = AsyncOpenAI(base_url=f"{URL}/openai/v1", api_key=TOKEN, max_retries=0,
                      http_client=httpx.AsyncClient(transport=transport("async")))
    sessions: dict[str, Any] = {"peer": peer, "ours": OpenAIConversationsSession(openai_client=api)}
    for side in SIDES:  # the peer makes its tables, ours its conversation, on the first call
        assert await sessions[side].get_items() == []
    peer_tables = ("agent_sessions", "agent_messages")
    peer_where, parts_query = tables_where(peer_tables), parts_sql(peer_tables)

    async def peer_bytes() -> int:
        if peer_kind == "sqlite":
            return sum(os.path.getsize(sqlite_path + end) for end in ("", "-wal")
                       if os.path.exists(sqlite_path + end))
        return await db.fetchval(SIZE_SQL.format(where=peer_where))

    timings = Timings()
    before = {"peer": await peer_bytes(), "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE))}
    parts_before = dict(list(r) for r in await db.fetch(parts_query))
    items = {side: 0 for side in SIDES}
    turn = 0
    while min(items.values()) < LARGE:
        for side in order(turn):
            n, began = items[side], time.perf_counter()
            # ids are the store's to give (the SDK sends the model's items without them)
            await sessions[side].add_items([{k: v for k, v in item.items() if k != "id"}
                                            for item in agent_items(turn)])
            if (size := window(n)) is not None:
                timings.add(f"add_items(3) @{size}", side, began)
            items[side] += 3
        turn += 1
    grown = {"peer": await peer_bytes() - before["peer"],
             "ours": await db.fetchval(SIZE_SQL.format(where=OURS_WHERE)) - before["ours"]}
    parts_after = dict(list(r) for r in await db.fetch(parts_query))
    for size in (SMALL, LARGE):
        timings.row(f"add_items(3) @{size:,}", target=True)

    def read(side: str, limit: int | None) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            got = await sessions[side].get_items(limit)
            assert len(got) == (limit or items[side])
        return call

    for call, limit in ((f"get_items @{LARGE:,}", None), (f"get_items(limit=20) @{LARGE:,}", 20)):
        await in_turns(timings, call, {side: read(side, limit) for side in SIDES}, READS)
        timings.row(call, target=limit is None)

    def pop(side: str) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            assert await sessions[side].pop_item() is not None
            items[side] -= 1
        return call

    await in_turns(timings, f"pop_item @{LARGE:,}", {side: pop(side) for side in SIDES}, READS)
    timings.row(f"pop_item @{LARGE:,}", target=True)
    await api.close()
    await db.close()
    folder.cleanup()
    return result(f"openai-conversations vs {type(peer).__name__}", timings, "item", grown,
                  {side: items[side] + READS for side in SIDES},
                  parts_grown(parts_before, parts_after, {side: items[side] + READS for side in SIDES}))


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name.startswith("openai-conversations"):
        print(json.dumps(asyncio.run(openai_conversations(
            "sqlite" if name.endswith("sqlite") else "sqlalchemy"))))
        return
    if name == "adk":
        answer = asyncio.run(adk())
    elif name == "langgraph":
        answer = langgraph()
    elif name == "openai-agents":
        answer = asyncio.run(openai_agents())
    else:
        sys.exit("usage: python -m framework_tests.peers adk|langgraph|openai-agents")
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
