"""ContextStoreMemoryTool answers every memory-tool command as the Anthropic SDK's own
BetaLocalFilesystemMemoryTool does: the same command sequences run against both (the SDK's tool
in a temporary folder, ours on the live test server), and every answer and error must be the
same (memory_tool_diff.outcome)."""

import asyncio
import tempfile
import uuid
from pathlib import Path

import pytest
from anthropic.tools.memory import BetaAsyncLocalFilesystemMemoryTool, BetaLocalFilesystemMemoryTool
from contextstore_client import AsyncContextStore, ContextStore
from contextstore_client.adapters.anthropic_memory import (
    AsyncContextStoreMemoryTool,
    ContextStoreMemoryTool,
    memory_namespace,
)
from hypothesis import HealthCheck, given, settings

from tests.adapters.memory_tool_diff import async_outcome, command_sequences, outcome

pytestmark = pytest.mark.slow


def view(path, view_range=None):
    return {"command": "view", "path": path, **({"view_range": view_range} if view_range else {})}


def create(path, text):
    return {"command": "create", "path": path, "file_text": text}


def rename(old, new):
    return {"command": "rename", "old_path": old, "new_path": new}


def delete(path):
    return {"command": "delete", "path": path}


def str_replace(path, old, new):
    return {"command": "str_replace", "path": path, "old_str": old, "new_str": new}


def insert(path, line, text):
    return {"command": "insert", "path": path, "insert_line": line, "insert_text": text}


# Sequences a person would write to probe the edges; the random ones below find the rest.
SEQUENCES = {
    "empty memory": [view("/memories"), view("/memories/"), view("/memories/none.md")],
    "unicode and empty files": [
        create("/memories/ünï/日本.md", "første linje\n🙂 zweite\n"), create("/memories/empty.txt", ""),
        view("/memories"), view("/memories/ünï/日本.md"), view("/memories/empty.txt"),
        view("/memories/empty.txt", [1, -1]), insert("/memories/empty.txt", 0, "only\n"),
        view("/memories/empty.txt")],
    "nested directories two levels deep": [
        create("/memories/a/b/c/d.md", "deep"), create("/memories/a/top.md", "x" * 2000),
        create("/memories/a/b/.secret", "hidden"), create("/memories/.hidden/x.md", "h"),
        view("/memories"), view("/memories/a"), view("/memories/a/b"), view("/memories/a/b/c/")],
    "view ranges": [
        create("/memories/r.md", "1\n2\n3\n4\n5"), view("/memories/r.md", [2, 3]),
        view("/memories/r.md", [0, 2]), view("/memories/r.md", [-5, -1]), view("/memories/r.md", [4, 99]),
        view("/memories/r.md", [9, 12]), view("/memories/r.md", [3, -3]), view("/memories/r.md", [2]),
        view("/memories/r.md", [1, 2, 3])],
    "edits": [
        create("/memories/e.md", "alpha\nbeta\nbeta\r\ngamma"), str_replace("/memories/e.md", "beta", "B"),
        str_replace("/memories/e.md", "delta", "D"), str_replace("/memories/e.md", "alpha", "A"),
        str_replace("/memories/e.md", "", "z"), insert("/memories/e.md", 5, "x"),
        insert("/memories/e.md", 4, "end\n\n"), insert("/memories/e.md", -1, "x"), view("/memories/e.md"),
        str_replace("/memories", "a", "b"), insert("/memories/nope.md", 0, "x")],
    "renames over existing and into themselves": [
        create("/memories/one.md", "1"), create("/memories/two.md", "2"), create("/memories/d/three.md", "3"),
        rename("/memories/one.md", "/memories/two.md"), rename("/memories/one.md", "/memories/d"),
        rename("/memories/d", "/memories/d/sub"), rename("/memories/d", "/memories/e/f"),
        rename("/memories/nope", "/memories/new/place.md"), rename("/memories", "/memories/x"),
        rename("/memories/one.md", "/memories/one.md/x"), rename("/memories/two.md/x", "/memories/y"),
        view("/memories"), view("/memories/e/f/three.md")],
    "deletes leave the folder": [
        create("/memories/k/l/m.md", "m"), delete("/memories/k/l/m.md"), view("/memories"),
        delete("/memories/k"), view("/memories"), delete("/memories"), delete("/memories/k"),
        delete("/memories/../x")],
    "traversal": [
        view("/memories/../x"), view("/memories/%2e%2e/x"), create("/memories/%2e%2e/x", "not a traversal"),
        view("/memories/%2e%2e"), view("/memories/a/../../etc/passwd"), create("/memories/../../x", "x"),
        view("/memories/../memories"), create("/memories/../memories/back.md", "in"), view("/etc/passwd"),
        view("memories"), view("/memoriesX"), create("/memoriesX/y.md", "y"), view("/memories"),
        view("/memories/a\x00b"), create("/memories/f.md/g", "x"), create("/memories/f.md", "x"),
        create("/memories/f.md/g", "x"), create("/memories/f.md/g/h", "x"), view("/memories/f.md/")],
}


def differences(commands, ours, tmp: Path) -> list:
    if tmp.stat().st_size != 4096:  # the local tool lists a directory with its size on disk
        pytest.skip("the temporary folder is not on a disk with ext4's 4,096-byte directories")
    local = BetaLocalFilesystemMemoryTool(str(tmp))
    root = tmp / "memories"
    return [(c, mine, theirs) for c in [*commands, view("/memories")]
            if (theirs := outcome(local, c, root)) != (mine := outcome(ours, c))]


@pytest.mark.parametrize("name", SEQUENCES)
def test_it_answers_as_the_sdks_local_tool(name, store, tmp_path):
    tool = ContextStoreMemoryTool(store, user_id=f"user-{uuid.uuid4().hex}")
    assert differences(SEQUENCES[name], tool, tmp_path) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands=command_sequences())
def test_random_command_sequences_answer_as_the_sdks_local_tool(commands, store):
    tool = ContextStoreMemoryTool(store, user_id=f"user-{uuid.uuid4().hex}")
    with tempfile.TemporaryDirectory() as folder:
        assert differences(commands, tool, Path(folder)) == []


def test_the_async_tool_answers_as_the_sdks_async_local_tool(live_server, token, tmp_path):
    async def run() -> list:
        async with AsyncContextStore(live_server.url, token[1]) as client:
            ours = AsyncContextStoreMemoryTool(client, user_id="ada")
            local = BetaAsyncLocalFilesystemMemoryTool(str(tmp_path))
            out = []
            for commands in SEQUENCES.values():
                for c in [*commands, view("/memories")]:
                    theirs = await async_outcome(local, c, tmp_path / "memories")
                    mine = await async_outcome(ours, c)
                    if theirs != mine:
                        out.append((c, mine, theirs))
                await local.clear_all_memory()
                await ours.clear_all_memory()
            return out

    assert asyncio.run(run()) == []


def test_files_are_per_user_durable_and_items_of_the_store(store, live_server, token):
    ada = ContextStoreMemoryTool(store, user_id="ada")
    ada.call(create("/memories/notes/todo.md", "buy milk\n"))
    ada.call(create("/memories/gone/x.md", "x"))
    ada.call(delete("/memories/gone/x.md"))
    # Another client, another user, another namespace of the same user.
    with ContextStore(live_server.url, token[1]) as other:
        assert "todo.md" in ContextStoreMemoryTool(other, user_id="ada").call(view("/memories"))
        assert ContextStoreMemoryTool(other, user_id="bob").call(view("/memories")).endswith("4K\t/memories")
        assert "todo.md" not in ContextStoreMemoryTool(other, user_id="ada", namespace="work").call(
            view("/memories"))
    item = store.store_get(memory_namespace("ada"), "notes/todo.md")
    assert item["value"] == {"content": "buy milk\n"}
    assert store.store_get(memory_namespace("ada"), "gone/")["value"] == {"directory": True}
    # A person's edit in the store is what the agent reads next.
    store.store_put(memory_namespace("ada"), "notes/todo.md", {"content": "buy oat milk\n"})
    assert ada.call(view("/memories/notes/todo.md")).endswith("1\tbuy oat milk\n     2\t")


def test_every_change_is_a_version_and_a_rename_is_a_move(store):
    from contextstore.models import StoreItem

    tool = ContextStoreMemoryTool(store, user_id="ada")
    tool.call(create("/memories/a/one.md", "1"))
    tool.call(str_replace("/memories/a/one.md", "1", "2"))
    tool.call(rename("/memories/a", "/memories/b"))
    assert store.store_get(memory_namespace("ada"), "b/one.md")["value"] == {"content": "2"}
    assert store.store_get(memory_namespace("ada"), "a/one.md") is None
    versions = {item.key: [(v.action, v.value, v.other_key) for v in item.versions.all()]
                for item in StoreItem.objects.filter(key__in=["a/one.md", "b/one.md", "a/"])}
    assert versions == {
        "a/one.md": [("put", {"content": "1"}, ""), ("put", {"content": "2"}, ""),
                     ("move_out", None, "b/one.md")],
        "b/one.md": [("move_in", {"content": "2"}, "a/one.md")],
    }


def test_it_refuses_an_empty_user_id(store):
    with pytest.raises(ValueError):
        ContextStoreMemoryTool(store, user_id="")


def test_timings_against_the_local_tool(store, tmp_path, capsys):
    """Each command's median time on both tools with 10 and 200 files held (printed for
    docs/performance.md): the local tool is a disk, ours a round trip or two."""
    import json
    import statistics
    import time

    figures = {}
    for size in (10, 200):
        folder = tmp_path / str(size)
        tools = {"local": BetaLocalFilesystemMemoryTool(str(folder)),
                 "contextstore": ContextStoreMemoryTool(store, user_id=f"bench-{size}-{uuid.uuid4().hex}")}
        for name, tool in tools.items():
            for n in range(size):
                tool.call(create(f"/memories/d{n % 10}/f{n}.md", f"note {n}\n" * 20))
            runs = {}
            for i in range(5):
                for label, command in [
                        ("create", create(f"/memories/new/{i}.md", "first\n" + "x\n" * 20)),
                        ("view file", view(f"/memories/d1/f{11 if size > 11 else 1}.md")),
                        ("str_replace", str_replace(f"/memories/new/{i}.md", "first", "1st")),
                        ("insert", insert(f"/memories/new/{i}.md", 1, "z")),
                        ("view /memories", view("/memories")),
                        ("rename", rename(f"/memories/new/{i}.md", f"/memories/moved/{i}.md")),
                        ("delete", delete(f"/memories/moved/{i}.md"))]:
                    start = time.perf_counter()
                    outcome_ = outcome(tool, command)
                    runs.setdefault(label, []).append(1000 * (time.perf_counter() - start))
                    assert outcome_[0] == "ok", (label, outcome_)
            figures[f"{name} @{size}"] = {label: round(statistics.median(ms), 3)
                                          for label, ms in runs.items()}
        floor = []
        for _ in range(5):  # one request of the store: what a round trip costs on this server now
            start = time.perf_counter()
            store.store_get(["floor"], "missing")
            floor.append(1000 * (time.perf_counter() - start))
        figures[f"contextstore @{size}"]["one store request"] = round(statistics.median(floor), 3)
    with capsys.disabled():
        print("\nMEMORY_TOOL_TIMINGS " + json.dumps(figures))


def test_the_sdks_tool_runner_drives_it(store):
    """A scripted model (the Messages API answered locally) creates, views and misuses a memory
    file through the SDK's own tool runner; the tool results it sends back are ours."""
    import json

    import anthropic
    import httpx2 as httpx  # the SDK's own HTTP library

    script = [{"command": "create", "path": "/memories/prefs.md", "file_text": "coffee: black\n"},
              {"command": "view", "path": "/memories"},
              {"command": "view", "path": "/memories/../secrets"}]
    sent: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        turn = len(sent) - 1
        content = ([{"type": "tool_use", "id": f"toolu_{turn}", "name": "memory", "input": script[turn]}]
                   if turn < len(script) else [{"type": "text", "text": "Noted."}])
        return httpx.Response(200, json={
            "id": f"msg_{turn}", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": "tool_use" if turn < len(script) else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})

    transport = httpx.MockTransport(answer)
    model = anthropic.Anthropic(api_key="test", http_client=httpx.Client(transport=transport))
    tool = ContextStoreMemoryTool(store, user_id="ada")
    runner = model.beta.messages.tool_runner(model="claude-sonnet-5-5", max_tokens=100, tools=[tool],
                                             messages=[{"role": "user", "content": "I take coffee black."}])
    assert [m.content[0].type for m in runner] == ["tool_use"] * 3 + ["text"]
    assert sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = [body["messages"][-1]["content"][0] for body in sent[1:]]
    assert [r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in results] == [
        "File created successfully at: /memories/prefs.md",
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n"
        "4K\t/memories\n14B\t/memories/prefs.md",
        "Path /memories/../secrets would escape /memories directory"]
    assert [r.get("is_error", False) for r in results] == [False, False, True]
    assert store.store_get(memory_namespace("ada"), "prefs.md")["value"] == {"content": "coffee: black\n"}


def test_a_person_reads_edits_and_undoes_a_users_memory_files_in_the_dashboard(store, workspace):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from contextstore.models import Membership, StoreItem

    tool = ContextStoreMemoryTool(store, user_id="ada")
    tool.call(create("/memories/prefs/coffee.md", "<b>black</b>\n"))
    person = get_user_model().objects.create_user("eddie", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.EDITOR)
    browser = Client()
    browser.force_login(person)
    item = StoreItem.objects.get(key="prefs/coffee.md")
    listing = browser.get("/store/?ns=memories&ns=ada").content.decode()  # that user's memories
    assert f"/store/items/{item.pk}/" in listing and "<b>black" not in listing
    browser.post(f"/store/items/{item.pk}/edit/", {"value": '{"content": "oat latte\\n"}'})
    assert tool.call(view("/memories/prefs/coffee.md")).endswith("1\toat latte\n     2\t")
    browser.post(f"/store/items/{item.pk}/undo/")
    assert tool.call(view("/memories/prefs/coffee.md")).endswith("1\t<b>black</b>\n     2\t")


def test_erasing_a_user_erases_their_memory_files(store, workspace):
    from contextstore.services.common import Actor
    from contextstore.services.erasure import user_erase

    ada, bob = (ContextStoreMemoryTool(store, user_id=u) for u in ("ada", "bob"))
    ada.call(create("/memories/a.md", "ada's"))
    bob.call(create("/memories/b.md", "bob's"))
    user_erase(workspace=workspace, user_id="ada", actor=Actor.system("test"))
    assert ada.call(view("/memories")).endswith("4K\t/memories")
    assert bob.call(view("/memories")).endswith("5B\t/memories/b.md")
