import pytest

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import AuditLog, Event, Memory, ProviderState
from contextstore.selectors.workspaces import memory_recall
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember, provider_state_put
from contextstore.services.state import state_write
from contextstore.services.sync import sync_apply
from contextstore.services.threads import thread_fork
from contextstore.services.transfer import thread_export, thread_import
from tests.conftest import messages


def test_export_then_import_gives_the_same_thread(thread, actor, workspace):
    event_append(thread=thread, events=messages(5) + [{"type": "LLMOutput", "parts": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}], "run_id": "r1"}],
        actor=actor)
    collapse_create(thread=thread, start_position=2, end_position=3, summary_text="s", actor=actor)
    state_write(thread=thread, state={"z": 1, "a": 2}, summary="sum", actor=actor)
    block_upsert(thread=thread, name="p", value="v", placement="prefix", actor=actor)
    thread.refresh_from_db()
    data = thread_export(thread=thread)
    copy = thread_import(workspace=workspace, data=data, session_key="copy", actor=actor)
    again = thread_export(thread=copy)
    for key in ("thread", "blocks", "session"):
        if key == "session":
            assert again[key]["key"] == "copy"
            continue
        assert again[key] == data[key]
    strip = lambda events: [{k: v for k, v in e.items() if k not in ("collapse", "run_id")} for e in events]  # noqa: E731
    assert strip(again["events"]) == strip(data["events"])
    assert [c["summary_seq"] for c in again["collapses"]] == [c["summary_seq"] for c in data["collapses"]]
    assert (copy.active_event_count, copy.active_tokens) == (thread.active_event_count, thread.active_tokens)


def test_a_thread_with_a_sync_rewrite_exports_and_imports(thread, actor, workspace):
    """A rewritten item stands where its old version stood, before its own seq, as a Summary
    does; the import takes it there."""
    def save(*contents: str) -> None:
        sync_apply(thread=thread, namespace="fw", actor=actor, items=[
            {"key": f"k{i}", "event": {"type": "Message", "content": c}} for i, c in enumerate(contents)])

    save("first", "second")
    save("first, rewritten", "second")
    data = thread_export(thread=thread)
    assert [(e["seq"], e["position"], e["status"]) for e in data["events"]] == [
        (1, 1, "replaced"), (2, 2, "active"), (3, 1, "active")]
    copy = thread_import(workspace=workspace, data=data, session_key="copy", actor=actor)
    assert [(e["seq"], e["position"], e["status"]) for e in thread_export(thread=copy)["events"]] == [
        (1, 1, "replaced"), (2, 2, "active"), (3, 1, "active")]


def test_import_into_a_taken_name_is_a_conflict(thread, actor, workspace):
    data = thread_export(thread=thread)
    with pytest.raises(Conflict):
        thread_import(workspace=workspace, data=data, actor=actor)


def test_a_malformed_import_is_refused_and_changes_nothing(actor, workspace):
    with pytest.raises(InvalidInput):
        thread_import(workspace=workspace, data={"format": "contextstore", "thread": {},
                                                  "events": [{"seq": 2}]}, session_key="x", actor=actor)
    with pytest.raises(InvalidInput):
        thread_import(workspace=workspace, data={"nothing": 1}, actor=actor)
    assert not Event.objects.exists()


def test_a_big_import_with_a_value_the_database_refuses_is_refused_and_changes_nothing(
        actor, workspace):
    """Enough events to be COPYed on PostgreSQL: the database's refusal of one (a peteos count
    below zero) is an input error there too, as bulk_create's is on SQLite."""
    messages_ = [{"id": f"m{i}", "role": "user", "content": f"turn {i}"} for i in range(30)]
    messages_[7]["token_count"] = -1
    with pytest.raises(InvalidInput, match="refuses|conflicts"):
        thread_import(workspace=workspace, data={"id": "big", "messages": messages_}, actor=actor)
    assert not Event.objects.exists() and not workspace.sessions.exists()


def test_provider_state_is_versioned_per_provider(thread, actor):
    provider_state_put(thread=thread, provider="UserInfoMemory", state={"name": None}, actor=actor)
    obj = provider_state_put(thread=thread, provider="UserInfoMemory", state={"name": "Ann"}, actor=actor)
    assert (obj.state, obj.version) == ({"name": "Ann"}, 2)
    assert ProviderState.objects.count() == 1
    assert AuditLog.objects.filter(action="provider_state.put").count() == 2


def test_remember_upserts_by_user_and_key_and_recall_searches(workspace, other_workspace, actor):
    memory_remember(workspace=workspace, user_id="ann", key="name", content="Her name is Ann.", actor=actor)
    memory_remember(workspace=workspace, user_id="ann", key="name", content="Her name is Anne.", actor=actor)
    memory_remember(workspace=workspace, user_id="ann", content="Likes tea.", actor=actor)
    memory_remember(workspace=other_workspace, user_id="ann", content="Likes tea too.", actor=actor)
    assert Memory.objects.filter(workspace=workspace).count() == 2
    assert [m.content for m in memory_recall(workspace=workspace, user_id="ann", q="anne")] == [
        "Her name is Anne."]
    assert [m.content for m in memory_recall(workspace=workspace, user_id="ann", q="tea")] == ["Likes tea."]
    # a blank content is refused at the door (tests/views/test_shape_doors.py)


@pytest.mark.parametrize("change", [
    lambda d: d["thread"].update(summarizer={"token_budget": {"max_tokens": 5}}),
    lambda d: d["thread"].update(summarizer="x"),
    lambda d: d["thread"].update(state=[1]),
    lambda d: d["thread"].update(memory=["not an object"]),
    lambda d: d["blocks"].append({"name": "bad", "expr": "{% if %}"}),
    lambda d: d["events"][0].update(status="gone"),
    lambda d: d["events"][0].update(type="Not a type!"),
    lambda d: d["events"][1].update(position=1),
    lambda d: d["events"][0].update(role="r" * 40),
])
def test_an_import_is_checked_like_the_services_and_a_refused_one_leaves_nothing(
        thread, actor, workspace, change):
    event_append(thread=thread, events=messages(3), actor=actor)
    data = thread_export(thread=thread)
    change(data)
    sessions_before = workspace.sessions.count()
    with pytest.raises(InvalidInput):
        thread_import(workspace=workspace, data=data, session_key="fresh", actor=actor)
    assert workspace.sessions.count() == sessions_before
    assert Event.objects.count() == 3


def test_fork_and_import_keep_the_session_counters_exact(thread, session, actor, workspace):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Error", "content": "boom"},
        {"type": "LLMComplete", "data": {"cost": 0.5}}])
    thread_fork(thread=thread, name="alt", actor=actor)
    session.refresh_from_db()
    assert (session.event_count, session.error_count, float(session.cost_total)) == (4, 2, 1.0)
    copy = thread_import(workspace=workspace, data=thread_export(thread=thread), session_key="c",
                         actor=actor)
    copy.session.refresh_from_db()
    assert (copy.session.event_count, copy.session.error_count, copy.session.thread_count) == (2, 1, 1)
