"""contextstore-mcp through the mcp SDK's own client, over stdio and Streamable HTTP (the
`transport` fixture runs each test on both), against a live server: every tool, every error
path, resources, and a subscription told of a person's edit."""

import json
import re
import subprocess
import sys
import tomllib
import warnings

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.shared.exceptions import MCPDeprecationWarning

from contextstore.models import Collapse, ContextBlock, Event, Memory, Thread
from contextstore.services import blocks, collapses
from contextstore.services.common import Actor
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.mcp.conftest import CLIENT_SRC, ROOT, SERVER, call, in_db, refused

pytestmark = pytest.mark.anyio

DEFAULT = ("--session-key", "s-1", "--user-id", "alice")
WRITES = {"append_events", "remember", "set_block", "collapse", "undo_collapse"}


def person_edit(thread: Thread, **block) -> None:
    """What the dashboard's block form does: one service call, by someone else than the agent."""
    blocks.block_upsert(thread=thread, actor=Actor.system("someone"), **block)


# ------------------------------------------------------------------------------ the tools

async def test_tools_say_which_ones_write_and_declare_their_schemas(connect):
    async with connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == WRITES | {"list_sessions", "get_thread", "get_context", "search_events",
                                   "recall", "get_block"}
    for name, tool in tools.items():
        assert tool.annotations.read_only_hint is (name not in WRITES), name
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
    assert tools["append_events"].annotations.destructive_hint is False
    assert tools["set_block"].annotations.destructive_hint is True
    assert tools["collapse"].annotations.destructive_hint is True
    assert tools["append_events"].input_schema["required"] == ["events"]
    assert set(tools["get_context"].input_schema["properties"]["format"]["enum"]) == {
        "raw", "openai", "anthropic"}
    assert "seq" in tools["search_events"].output_schema["$defs"]["Event"]["properties"]


async def test_every_tool_works_on_the_default_thread(connect, thread):
    async with connect(*DEFAULT) as client:
        appended = await call(client, "append_events", events=[
            {"type": "Task", "content": "plan the trip to Lisbon"},
            {"type": "Message", "role": "user", "content": "I prefer trains"},
            {"type": "Message", "role": "assistant", "content": "Noted: trains.", "client_id": "a1"},
        ])
        assert appended["thread_id"] == thread.pk
        assert [e["seq"] for e in appended["events"]] == [1, 2, 3]
        assert appended["events"][2]["client_id"] == "a1"

        got = await call(client, "get_thread")
        assert (got["id"], got["session_key"], got["event_count"]) == (thread.pk, "s-1", 3)
        assert (await call(client, "get_thread", thread_id=thread.pk)) == got

        found = await call(client, "search_events", q="TRAINS")
        assert [e["seq"] for e in found["events"]] == [2, 3]
        assert [e["seq"] for e in (await call(client, "search_events", type=["Task"]))["events"]] == [1]
        assert [e["seq"] for e in (await call(client, "search_events", regex="^plan"))["events"]] == [1]
        assert [e["seq"] for e in (await call(client, "search_events", limit=1))["events"]] == [3]

        block = await call(client, "set_block", name="persona", value="You plan trips.",
                           placement="prefix")
        assert (block["name"], block["version"], block["placement"]) == ("persona", 1, "prefix")
        assert (await call(client, "get_block", name="persona"))["value"] == "You plan trips."

        context = await call(client, "get_context", format="openai")
        assert context["messages"][0] == {"role": "system", "content": "## persona\nYou plan trips."}
        assert [m["content"] for m in context["messages"][1:]] == [
            "plan the trip to Lisbon", "I prefer trains", "Noted: trains."]
        assert context["stats"]["fits"] is True

        collapsed = await call(client, "collapse", start_position=1, end_position=2,
                               summary_text="Task: Lisbon by train.")
        assert (collapsed["start_position"], collapsed["end_position"]) == (1, 2)
        raw = await call(client, "get_context")
        assert [m["content"] for m in raw["messages"] if m["section"] == "history"] == [
            "Task: Lisbon by train.", "Noted: trains."]
        undone = await call(client, "undo_collapse", collapse_id=collapsed["id"])
        assert undone["undone_at"] is not None

        memory = await call(client, "remember", content="Alice prefers trains", key="travel")
        assert (memory["user_id"], memory["key"]) == ("alice", "travel")
        recalled = await call(client, "recall", q="trains")
        assert [m["content"] for m in recalled["memories"]] == ["Alice prefers trains"]
        assert (await call(client, "recall", user_id="bob"))["memories"] == []

        sessions = await call(client, "list_sessions", user_id="alice")
        assert [s["key"] for s in sessions["sessions"]] == ["s-1"] and not sessions["more"]

    assert await in_db(lambda: list(Event.objects.filter(thread=thread).order_by("seq").values_list(
        "seq", "status"))) == [(1, "active"), (2, "active"), (3, "active"), (4, "reverted")]
    assert await in_db(lambda: ContextBlock.objects.get(thread=thread).value) == "You plan trips."
    assert await in_db(lambda: Collapse.objects.get(thread=thread).undone_at is not None)
    assert await in_db(lambda: Memory.objects.get(key="travel").content) == "Alice prefers trains"


async def test_the_default_thread_is_created_on_first_use(connect, workspace):
    async with connect("--session-key", "new-conversation", "--user-id", "bo", "--agent", "planner",
                       "--thread", "side") as client:
        got = await call(client, "get_thread")
        sessions = await call(client, "list_sessions", agent="planner")
    assert (got["session_key"], got["user_id"], got["name"]) == ("new-conversation", "bo", "side")
    assert [s["key"] for s in sessions["sessions"]] == ["new-conversation"]


async def test_list_sessions_filters_as_the_api_and_pages_up_to_its_limit(connect, workspace, actor):
    def make():
        for i in range(5):
            session_ensure(workspace=workspace, key=f"k{i}", user_id="u" if i % 2 else "v",
                           agent="a", actor=actor)
    await in_db(make)
    async with connect() as client:
        page = await call(client, "list_sessions", limit=2)
        assert [s["key"] for s in page["sessions"]] == ["k0", "k1"] and page["more"]
        assert [s["key"] for s in (await call(client, "list_sessions", user_id="u"))["sessions"]] == [
            "k1", "k3"]
        assert [s["key"] for s in (await call(client, "list_sessions", q="k4"))["sessions"]] == ["k4"]
        assert (await call(client, "list_sessions", archived=True))["sessions"] == []


# ------------------------------------------------------------------------------ errors

async def test_api_errors_come_back_as_tool_errors_with_the_apis_message(connect, thread, other_workspace,
                                                                         actor):
    def foreign():
        session = session_ensure(workspace=other_workspace, key="theirs", actor=actor)[0]
        return thread_ensure(session=session, actor=actor)[0].pk
    theirs = await in_db(foreign)
    async with connect(*DEFAULT) as client:
        assert "Not found. (not_found, HTTP 404)" in await refused(client, "get_thread", thread_id=theirs)
        assert "HTTP 404" in await refused(client, "get_context", thread_id=10**9)
        bad_type = await refused(client, "append_events", events=[{"type": "Message\n"}])
        assert "events[0].type" in bad_type and "HTTP 400" in bad_type
        assert "HTTP 400" in await refused(client, "collapse", start_position=5, end_position=2,
                                           summary_text="x")
        assert "HTTP 404" in await refused(client, "undo_collapse", collapse_id=10**9)
        assert "HTTP 400" in await refused(client, "search_events", regex="(unclosed")
        assert "HTTP 400" in await refused(client, "set_block", name="b", expr="{% for x in y %}{% endfor %}")
        missing = await refused(client, "get_block", name="nope")
        assert "has no block named 'nope'" in missing
        # The SDK checks arguments against the schema before any request.
        assert "greater than or equal to 1" in await refused(client, "collapse", start_position=0,
                                                             end_position=1, summary_text="x")
        assert "Field required" in await refused(client, "remember")
        # The server is still serving.
        assert (await call(client, "get_thread"))["id"] == thread.pk
    assert await in_db(lambda: Event.objects.filter(thread=thread).count()) == 0


async def test_thread_tools_without_a_default_thread_ask_for_thread_id(connect, thread):
    async with connect() as client:
        assert "Give thread_id" in await refused(client, "get_context")
        assert (await call(client, "get_thread", thread_id=thread.pk))["id"] == thread.pk


async def test_an_unreachable_api_is_a_tool_error_not_a_crash(connect, transport):
    # Port 9 (discard) is closed on a test machine; the client gives up after its retries.
    async with connect(*DEFAULT, env={"CONTEXTSTORE_URL": "http://127.0.0.1:9"}) as client:
        assert "GET sessions/" in await refused(client, "list_sessions")
        assert len((await client.list_tools()).tools) == 11


async def test_a_read_scoped_token_makes_every_write_tool_refuse_and_reads_work(connect, thread, read_token):
    await in_db(person_edit, thread, name="persona", value="v")
    async with connect(*DEFAULT, env={"CONTEXTSTORE_TOKEN": read_token[1]}) as client:
        arguments = {
            "append_events": {"events": [{"type": "Message", "content": "x"}]},
            "remember": {"content": "x"},
            "set_block": {"name": "persona", "value": "changed"},
            "collapse": {"start_position": 1, "end_position": 1, "summary_text": "x"},
            "undo_collapse": {"collapse_id": 1},
        }
        for name in WRITES:
            text = await refused(client, name, **arguments[name])
            assert text.startswith(f"Error executing tool {name}: {name} changes contextstore and "
                                   "this server's token may only read: This token has read scope"), text
        # The default thread exists: a read token finds it without creating anything.
        assert (await call(client, "get_thread"))["id"] == thread.pk
        assert (await call(client, "get_block", name="persona"))["value"] == "v"
        assert (await call(client, "get_context"))["thread_id"] == thread.pk
        assert (await call(client, "recall"))["memories"] == []
    assert await in_db(lambda: Event.objects.count() + Memory.objects.count()) == 0
    assert await in_db(lambda: ContextBlock.objects.get().value) == "v"


async def test_a_read_scoped_token_cannot_create_the_default_thread(connect, workspace, read_token):
    async with connect("--session-key", "nobody-yet", env={"CONTEXTSTORE_TOKEN": read_token[1]}) as client:
        assert "does not exist yet" in await refused(client, "get_thread")


# ------------------------------------------------------------------------------ resources

async def test_resources_read_the_context_a_block_and_a_session(connect, thread):
    await in_db(person_edit, thread, name="a b#c?", value="odd name")
    await in_db(person_edit, thread, name="persona", value="You plan trips.", placement="prefix")
    async with connect() as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"contextstore://threads/{thread_id}/context",
                             "contextstore://threads/{thread_id}/blocks/{name}",
                             "contextstore://sessions/{session_id}"}

        async def read(uri):
            contents = (await client.read_resource(uri)).contents
            assert contents[0].mime_type == "application/json"
            return json.loads(contents[0].text)

        context = await read(f"contextstore://threads/{thread.pk}/context")
        assert context["messages"][0]["content"] == "## persona\nYou plan trips."
        assert (await read(f"contextstore://threads/{thread.pk}/blocks/persona"))["version"] == 1
        assert (await read(f"contextstore://threads/{thread.pk}/blocks/a%20b%23c%3F"))["value"] == "odd name"
        session = await read(f"contextstore://sessions/{thread.session_id}")
        assert session["session"]["key"] == "s-1" and [t["id"] for t in session["threads"]] == [thread.pk]

        for uri in (f"contextstore://threads/{thread.pk}/blocks/nope", "contextstore://sessions/999999",
                    "contextstore://threads/999999/context"):
            with pytest.raises(MCPError) as error:
                await client.read_resource(uri)
            assert error.value.error.code == types.INVALID_PARAMS, uri


# ------------------------------------------------------------------------------ subscriptions

async def test_resources_subscribe_tells_the_client_when_a_person_edits_the_block(connect, thread):
    await in_db(person_edit, thread, name="persona", value="first")
    block_uri = f"contextstore://threads/{thread.pk}/blocks/persona"
    context_uri = f"contextstore://threads/{thread.pk}/context"
    updated: list[str] = []
    arrived = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            arrived.set()

    async with connect(mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.subscribe_resource(block_uri)
            await client.subscribe_resource(context_uri)
            with pytest.raises(MCPError, match="HTTP 404"):
                await client.subscribe_resource("contextstore://threads/999999/context")
        await anyio.sleep(0.6)  # a few polls: nothing changed, nothing sent
        assert updated == []

        await in_db(person_edit, thread, name="persona", value="second")
        with anyio.fail_after(10):
            await arrived.wait()
        await anyio.sleep(0.5)
        assert sorted(set(updated)) == sorted({block_uri, context_uri})
        assert json.loads((await client.read_resource(block_uri)).contents[0].text)["value"] == "second"

        async def after(change) -> set[str]:
            """The URIs notified after `change` (waiting for the first, then a few polls more)."""
            nonlocal arrived
            updated.clear()
            arrived = anyio.Event()
            await change()
            with anyio.fail_after(10):
                await arrived.wait()
            await anyio.sleep(0.5)
            return set(updated)

        # Appends (the agent's own) and a collapse (a person's) change the context, not the block.
        assert await after(lambda: call(client, "append_events", thread_id=thread.pk, events=[
            {"type": "Message", "content": "one"}, {"type": "Message", "content": "two"}])) == {context_uri}
        assert await after(lambda: in_db(lambda: collapses.collapse_create(
            thread=Thread.objects.get(pk=thread.pk), start_position=1, end_position=2,
            summary_text="both", actor=Actor.system("someone")))) == {context_uri}
        # Unsubscribed from the block, the client hears only of the context.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.unsubscribe_resource(block_uri)
        assert await after(lambda: in_db(person_edit, thread, name="persona", value="third")) == {
            context_uri}


async def test_a_listen_stream_is_told_when_a_person_edits_the_block_in_the_dashboard(
        connect, thread, dashboard):
    await in_db(person_edit, thread, name="persona", value="first")
    block_uri = f"contextstore://threads/{thread.pk}/blocks/persona"
    form = {"name": "persona", "kind": "value", "value": "second", "placement": "suffix", "order": 0}
    async with connect() as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[block_uri]) as stream:
            await anyio.sleep(0.6)
            saved = await in_db(dashboard.post, f"/threads/{thread.pk}/blocks/", form,
                                headers={"HX-Request": "true"})  # as the page's form sends it
            assert saved.status_code == 200
            with anyio.fail_after(10):
                event = await anext(stream)
        assert event.uri == block_uri
        assert json.loads((await client.read_resource(block_uri)).contents[0].text)["value"] == "second"


# ------------------------------------------------------------------------------ packaging

def test_it_needs_the_api_address_and_a_token_and_imports_nothing_of_django():
    # One interpreter for both (importing the MCP SDK costs about 2 s of CPU): the module runs
    # as `python -m` runs it, without the server's address, and the modules it loaded are read.
    code = ("import runpy, sys\n"
            "try:\n"
            "    runpy.run_module('contextstore_client.mcp_server', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as exit:\n"
            "    status = exit.code\n"
            "django = any(m == 'django' or m.startswith('django.') for m in sys.modules)\n"
            "print(status, 'django' if django else 'no django')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=CLIENT_SRC, env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=False)
    assert run.stdout.split() == ["2", "no", "django"], run.stdout + run.stderr
    assert "CONTEXTSTORE_URL and CONTEXTSTORE_TOKEN" in run.stderr


@pytest.mark.parametrize("doc", ["README.md", "docs/mcp.md"])
async def test_the_documented_host_configuration_gives_the_agent_its_thread(doc, mcp_env, workspace):
    block = re.search(r"```json\n(.*?)```", (ROOT / doc).read_text(), re.S)[1]
    config = json.loads(block)["mcpServers"]["contextstore"]
    scripts = tomllib.loads((CLIENT_SRC / "pyproject.toml").read_text())["project"]["scripts"]
    # The console script runs this module's main (through _mcp_command, which turns a missing
    # mcp extra into an install hint); the URL and token are this test server's.
    assert scripts[config["command"]] == "contextstore_client._mcp_command:main"
    env = {**mcp_env, **config["env"], **{k: mcp_env[k] for k in ("CONTEXTSTORE_URL", "CONTEXTSTORE_TOKEN")}}
    server = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], *config["args"]], env=env)
    async with Client(server) as client:
        got = await call(client, "get_thread")
    assert (got["session_key"], got["user_id"], got["name"]) == ("conversation-42", "ann", "main")
