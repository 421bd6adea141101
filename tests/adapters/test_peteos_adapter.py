"""The peteos adapter against a live contextstore: save_context / load_context over HTTP."""

import json

from peteos.conversation.context import Context
from peteos.conversation.message import ContentPart, Message, ToolApprovalStatus

from contextstore.adapters.peteos import load_context, save_context
from contextstore.client import ContextStore
from tests.adapters.test_peteos_service import conversation, plain, text


def test_a_context_saved_in_steps_loads_back_equal_in_another_client(live_server, store, token):
    thread = store.thread("peteos-1", agent="peteos")
    ctx = conversation()
    save_context(ctx, thread)
    # Keep working: a new anchor, an append at an earlier anchor, a change made in place.
    ctx.add_anchor("late", 2)
    ctx.append(text("user", "inserted at an early anchor"), anchor_point="late")
    call = next(p for m in ctx.messages for p in m.content if p.type == "tool_use")
    call.set_approval_status(ToolApprovalStatus.APPROVED)
    ctx.append(text("assistant", "last words"))
    ctx.total_token_count()  # peteos caches a token count inside every message
    save_context(ctx, thread)

    with ContextStore(live_server.url, token[1]) as other:
        loaded = load_context(other.get_thread(thread.id))

    assert plain(loaded.raw_dict) == plain(ctx.raw_dict)
    assert loaded.total_token_count() == ctx.total_token_count()


def test_saved_messages_are_events_and_saving_again_adds_none(store):
    thread = store.thread("peteos-2", agent="peteos")
    ctx = conversation()

    save_context(ctx, thread)
    save_context(ctx, thread)

    events = thread.events()
    ordinary = [m for m in ctx.messages
                if m not in (ctx.system_prompt_message, ctx.tool_definitions_message)]
    assert len(events) == len(ordinary)
    assert [e.data["peteos"]["_sequence_number"] for e in events] == sorted(
        m.raw_dict["_sequence_number"] for m in ordinary)
    assert events[1].type == "ToolCall" and events[2].type == "ToolResult"
    assert events[0].content == "What is the boiling point of water at sea level?"


def test_a_collapse_made_in_contextstore_reaches_the_agent_as_a_summary(store):
    thread = store.thread("peteos-3", agent="peteos")
    ctx = conversation()
    save_context(ctx, thread)

    thread.collapse(2, 3, "Looked the fact up: 100 °C.")
    loaded = load_context(thread)
    loaded.append(Message.create("user", [ContentPart.create_text("thanks")]))

    texts = [m.printable() for m in loaded.messages]
    assert "Looked the fact up: 100 °C." in texts
    assert "[ToolResult of call-1: 15 chars]" not in texts
    assert texts[-1] == "thanks"


def test_an_imported_context_agrees_with_peteos_on_tokens_and_windows(store):
    ctx = conversation()
    raw = plain(ctx.raw_dict)
    thread = store.import_thread(raw, session_key="peteos-4")

    assert thread.total_tokens() == ctx.total_token_count()
    theirs = Context.load_from_dict(plain(ctx.raw_dict)).rolling_sequence_window(3)
    ours = thread.window(count=3)
    special = {theirs.system_prompt_message, theirs.tool_definitions_message}
    assert {e.data["peteos"]["id"] for e in ours.events} == {
        m.id for m in theirs.messages if m not in special}
    assert json.dumps(thread.export(format="peteos")) == json.dumps(raw)  # key order too
