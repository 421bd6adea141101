"""peteos JSON import/export, windows, token counts and strip-thinking against the real peteos."""

import copy
import json

import pytest
from peteos.conversation.context import Context
from peteos.conversation.message import ContentPart, Message
from peteos.conversation.system_prompt_message import SystemPromptMessage
from peteos.conversation.tool_definitions_message import ToolDefinitionsMessage

from contextstore.errors import InvalidInput
from contextstore.selectors import rendering, windows
from contextstore.selectors.peteos import thread_to_peteos
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.threads import thread_fork
from contextstore.services.transfer import thread_import
from contextstore.tokens import FRAME_TOKENS

PNG = {"type": "base64", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8",
       "media_type": "image/png"}


def plain(raw: dict) -> dict:
    """A raw_dict as it looks once written to JSON (peteos keeps anchors as tuples in memory)."""
    return json.loads(json.dumps(raw))


def text(role: str, words: str) -> Message:
    return Message.create(role, [ContentPart.create_text(words)])


def conversation() -> Context:
    """A context that uses every part type, a second anchor and the two special slots."""
    tools = ToolDefinitionsMessage({"content": [ContentPart.create_tool(
        "lookup", "Find a fact.", {"type": "object", "properties": {"q": {"type": "string"}}}
    ).raw_dict]})
    ctx = Context.create(SystemPromptMessage.create("You are a careful assistant."), tools)
    ctx.append(text("user", "What is the boiling point of water at sea level?"))
    ctx.add_anchor("scratch", ctx.get_anchor_msg_index("messages"), after_existing=False)
    ctx.append(Message.create("assistant", [
        ContentPart.create_thinking("The user wants a fact; I should look it up to be sure."),
        ContentPart.create_tool_use("call-1", "lookup", json.dumps({"q": "boiling point"})),
    ]))
    ctx.append(Message.create("user", [ContentPart.create_tool_result("call-1", "100 °C at 1 atm")]))
    ctx.append(text("user", "a note kept in the scratch partition"), anchor_point="scratch")
    ctx.append(Message.create("assistant", [
        ContentPart.create_thinking("Answer plainly."),
        ContentPart.create_text("Water boils at 100 °C at sea level."),
    ], metadata={"model": "fake-1"}))
    ctx.append(Message.create("user", [ContentPart.create_text("And this picture?"),
                                       ContentPart.create_image(PNG)]))
    ctx.append(Message.create("assistant", [ContentPart.create_thinking("Only thinking here.")]))
    ctx.append(text("assistant", "It is a one-pixel image."))
    ctx.messages[-1].tags.append("final")
    # A dynamic message: its hook resolves through the content map.
    ctx.content_map["sha-1"] = "resolved reminder text"
    ctx.append(Message({"role": "user", "content": [{"type": "text", "text": "reminder"}],
                        "_hook_ids": ["reminder-hook"]}))
    return ctx


def contexts() -> dict[str, Context]:
    base = conversation()
    fork = base.fork_insert_sequence(start=4, end=10)
    window = copy.deepcopy(base).rolling_token_window(80)
    assert window is not None
    return {"conversation": base, "fork": fork, "token window": window,
            "stripped": base.strip_thinking(), "empty": Context.create()}


@pytest.fixture(params=list(contexts()))
def peteos_context(request) -> Context:
    return contexts()[request.param]


def imported(workspace, actor, ctx: Context):
    return thread_import(workspace=workspace, data=plain(ctx.raw_dict), actor=actor)


def test_a_peteos_context_round_trips_to_an_equal_raw_dict(workspace, actor, peteos_context):
    thread = imported(workspace, actor, peteos_context)

    exported = thread_to_peteos(thread=thread)

    assert exported == plain(peteos_context.raw_dict)
    assert list(exported) == list(plain(peteos_context.raw_dict))  # key order too
    assert plain(Context.load_from_dict(exported).raw_dict) == plain(peteos_context.raw_dict)


def test_fork_lineage_survives_the_round_trip(workspace, actor):
    fork = contexts()["fork"]
    thread = imported(workspace, actor, fork)

    exported = thread_to_peteos(thread=thread)

    assert exported["origin_context_id"] == fork.raw_dict["origin_context_id"]
    assert exported["parent_mutation_counter"] == fork.raw_dict["parent_mutation_counter"]


def test_it_keeps_creation_order_as_seq_and_anchors_on_the_events(workspace, actor):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)

    events = list(thread.events.order_by("seq"))

    by_sequence = sorted(
        (m for m in ctx.messages if m not in (ctx.system_prompt_message, ctx.tool_definitions_message)),
        key=lambda m: m.raw_dict["_sequence_number"],
    )
    assert [e.data["peteos"]["id"] for e in events] == [m.id for m in by_sequence]
    assert [e.type for e in events[:3]] == ["Message", "ToolCall", "ToolResult"]
    assert {e.anchor for e in events} == {"messages", "scratch"}
    thread.refresh_from_db()
    assert thread.system_prompt == "You are a careful assistant."
    assert thread.tool_definitions[0]["name"] == "lookup"


def test_total_tokens_agree_with_peteos(workspace, actor, peteos_context):
    expected = Context.load_from_dict(plain(peteos_context.raw_dict)).total_token_count()
    thread = imported(workspace, actor, peteos_context)

    assert windows.total_tokens(thread=thread) == expected


def test_count_windows_pick_the_same_messages_as_peteos(workspace, actor):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)

    # Count 0 included: peteos reads it as entries[-0], the first entry, and so keeps everything
    # (a fork of the whole context, not None).
    for count in range(0, 11):
        theirs = Context.load_from_dict(plain(ctx.raw_dict)).rolling_sequence_window(count)
        ours = windows.window_by_count(thread=thread, count=count)
        assert ours["covers_all"] == (theirs is None), count
        if theirs is not None:
            special = {theirs.system_prompt_message, theirs.tool_definitions_message}
            assert {e.data["peteos"]["id"] for e in ours["events"]} == {
                m.id for m in theirs.messages if m not in special
            }, count


def test_a_count_window_of_zero_on_an_empty_thread_covers_all_as_peteos_returns_none(
    workspace, actor
):
    thread = imported(workspace, actor, Context.create())

    assert Context.create().rolling_sequence_window(0) is None
    assert windows.window_by_count(thread=thread, count=0) == {"events": [], "covers_all": True}


@pytest.fixture
def ordered_dangling_check(monkeypatch):
    """peteos hands _strip_dangling_tool_results a list made from a set, so whether a tool result
    counts as "preceded by its call" depends on hash order. Pin the order it means: sequence."""
    original = Context._strip_dangling_tool_results

    def in_sequence(self, messages):
        return original(self, sorted(messages, key=lambda m: m.raw_dict["_sequence_number"]))

    monkeypatch.setattr(Context, "_strip_dangling_tool_results", in_sequence)


def test_token_windows_pick_the_same_messages_as_peteos(workspace, actor, ordered_dangling_check):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)
    total = windows.total_tokens(thread=thread)

    for budget in range(0, total + 2, 7):
        theirs = Context.load_from_dict(plain(ctx.raw_dict)).rolling_token_window(budget)
        ours = windows.window_by_tokens(thread=thread, max_tokens=budget)
        assert ours["covers_all"] == (theirs is None), budget
        if theirs is not None:
            special = {theirs.system_prompt_message, theirs.tool_definitions_message}
            assert {e.data["peteos"]["id"] for e in ours["events"]} == {
                m.id for m in theirs.messages if m not in special
            }, budget


def test_strip_thinking_agrees_with_peteos(workspace, actor):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)
    theirs = Context.load_from_dict(plain(ctx.raw_dict)).strip_thinking()

    ours = thread_to_peteos(thread=thread, strip_thinking=True)

    assert [(m["id"], m["content"]) for m in ours["messages"]] == [
        (m.id, m.raw_dict["content"]) for m in theirs.messages
    ]
    # Token cost of the history without thinking, as peteos counts the stripped fork.
    fresh = Context.load_from_dict(plain(theirs.raw_dict))
    special = fresh.system_prompt_message.count_tokens() + fresh.tool_definitions_message.count_tokens()
    rendered = rendering.context_render(thread=thread, max_tokens=100_000, strip_thinking=True)
    # The render frames each message it sends (tokens.FRAME_TOKENS, one count for every request)
    history = [m for m in rendered["messages"] if m["section"] == "history"]
    assert rendered["stats"]["sections"]["history"]["tokens"] == (
        fresh.total_token_count() - special + FRAME_TOKENS * len(history))


def test_events_added_through_contextstore_export_as_a_context_peteos_can_extend(
    workspace, actor
):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "One more question."},
    ])

    exported = thread_to_peteos(thread=thread)
    loaded = Context.load_from_dict(exported)
    loaded.append(text("assistant", "Sure."))

    assert [m.printable() for m in loaded.messages[-2:]] == ["One more question.", "Sure."]
    assert loaded.anchor_points[-1] == ("messages", len(loaded.messages))
    assert loaded.message_count == ctx.message_count + 2
    numbers = [m.raw_dict["_sequence_number"] for m in loaded.messages[-2:]]
    assert numbers == [ctx.raw_dict["_mutation_counter"], ctx.raw_dict["_mutation_counter"] + 1]


def test_a_collapsed_range_exports_as_its_summary_in_place(workspace, actor):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)
    collapse_create(thread=thread, start_position=2, end_position=3, summary_text="Looked up: 100 °C.",
                    actor=actor)

    exported = thread_to_peteos(thread=thread)

    texts = [Message.from_dict(m).printable() for m in exported["messages"]]
    # The summary takes the tool call's place, after the note peteos shows before it.
    assert texts[2:5] == ["What is the boiling point of water at sea level?",
                          "a note kept in the scratch partition", "Looked up: 100 °C."]
    assert "[ToolCall: lookup id=call-1]" not in "\n".join(texts)
    assert Context.load_from_dict(exported).anchor_points[-1][1] == len(exported["messages"])


def test_a_contextstore_fork_of_a_peteos_thread_exports_as_a_peteos_fork(workspace, actor):
    ctx = conversation()
    thread = imported(workspace, actor, ctx)

    child = thread_fork(thread=thread, name="branch", start_position=2, end_position=4, actor=actor)
    exported = thread_to_peteos(thread=child)
    loaded = Context.load_from_dict(exported)
    loaded.append(text("user", "continuing the branch"))

    assert exported["origin_context_id"] == ctx.id and exported["id"] != ctx.id
    assert loaded.system_prompt_message.printable() == "You are a careful assistant."
    texts = [m.printable() for m in loaded.messages[2:]]
    assert texts == [
        "a note kept in the scratch partition",
        "The user wants a fact; I should look it up to be sure.\n[ToolCall: lookup id=call-1]",
        "[ToolResult of call-1: 15 chars]", "continuing the branch"]
    assert loaded.anchor_points[-1] == ("messages", len(loaded.messages))


def test_it_refuses_a_context_whose_messages_are_not_objects(workspace, actor):
    with pytest.raises(InvalidInput):
        thread_import(workspace=workspace, data={"messages": ["hello"]}, actor=actor)


def thinking_mix(turns: int) -> Context:
    """A generated conversation of every shape strip_thinking treats: thinking only, empty, no
    content, text with thinking, redacted thinking alone and with text, thinking beside an empty
    text, an image; some messages with a cached token count."""
    shapes = [
        [{"type": "thinking", "thinking": "weighing the options"}],
        [],
        None,
        [{"type": "thinking", "thinking": "plan"}, {"type": "text", "text": "the answer"}],
        [{"type": "redacted_thinking", "data": "c2VjcmV0IHJlYXNvbmluZw=="}],
        [{"type": "redacted_thinking", "data": "bW9yZQ=="}, {"type": "text", "text": "said"}],
        [{"type": "thinking", "thinking": "nothing to say"}, {"type": "text", "text": ""}],
        [{"type": "thinking", "thinking": ""}],
        [ContentPart.create_image(PNG).raw_dict],
    ]
    ctx = Context.create(SystemPromptMessage.create("You are terse."))
    for turn in range(turns):
        ctx.append(text("user", f"question {turn}"))
        content = shapes[turn % len(shapes)]
        role = "assistant" if turn % 4 else "user"
        ctx.append(Message({"role": role} if content is None else {"role": role, "content": content}))
        if turn % 3 == 0:
            ctx.messages[-1].count_tokens()
        ctx.append(text("assistant", f"reply {turn}"))
    return ctx


def test_a_strip_thinking_render_shows_the_messages_and_tokens_of_peteos_stripped_context(
    workspace, actor
):
    ctx = thinking_mix(27)
    thread = imported(workspace, actor, ctx)
    stripped = Context.load_from_dict(plain(ctx.raw_dict)).strip_thinking()
    theirs = Context.load_from_dict(plain(stripped.raw_dict))
    kept = [m for m in theirs.messages if m is not theirs.system_prompt_message]

    rendered = rendering.context_render(thread=thread, max_tokens=1_000_000, strip_thinking=True)
    exported = thread_to_peteos(thread=thread, strip_thinking=True)

    ids = {e.seq: e.data["peteos"]["id"] for e in thread.events.all()}
    history = [m for m in rendered["messages"] if m["section"] == "history"]
    assert [ids[m["seq"]] for m in history] == [m.id for m in kept]
    assert [m["tokens"] for m in history] == [m.count_tokens() for m in kept]
    assert [m.get("parts") for m in history] == [m.raw_dict.get("content") for m in kept]
    assert rendered["stats"]["sections"]["history"]["tokens"] == (
        theirs.total_token_count() - theirs.system_prompt_message.count_tokens()
        + FRAME_TOKENS * len(history))
    assert [(m["id"], m["content"]) for m in exported["messages"]] == [
        (m.id, m.raw_dict["content"]) for m in theirs.messages]


def test_a_strip_thinking_render_leaves_out_what_peteos_fork_does_not_copy(workspace, actor):
    """A context whose _mutation_counter lags its messages' numbers, and a message with no
    number: peteos' strip_thinking (a fork_insert_sequence over [0, _mutation_counter)) leaves
    them out, and so does the render, message by message and token by token."""
    raw = plain(thinking_mix(9).raw_dict)
    ordinary = [m for m in raw["messages"] if m["id"] != raw["system_prompt_message_id"]]
    raw["_mutation_counter"] = ordinary[-3]["_sequence_number"]  # the last three are past it
    del ordinary[3]["_sequence_number"]
    thread = thread_import(workspace=workspace, data=copy.deepcopy(raw), actor=actor)
    stripped = Context.load_from_dict(copy.deepcopy(raw)).strip_thinking()
    theirs = Context.load_from_dict(plain(stripped.raw_dict))
    kept = [m for m in theirs.messages if m is not theirs.system_prompt_message]
    assert ordinary[3]["id"] not in {m.id for m in kept} and ordinary[-1]["id"] not in {m.id for m in kept}

    rendered = rendering.context_render(thread=thread, max_tokens=1_000_000, strip_thinking=True)
    exported = thread_to_peteos(thread=thread, strip_thinking=True)

    ids = {e.seq: e.data["peteos"]["id"] for e in thread.events.all()}
    history = [m for m in rendered["messages"] if m["section"] == "history"]
    assert [ids[m["seq"]] for m in history] == [m.id for m in kept]
    assert [m["tokens"] for m in history] == [m.count_tokens() for m in kept]
    assert rendered["stats"]["sections"]["history"]["tokens"] == (
        theirs.total_token_count() - theirs.system_prompt_message.count_tokens()
        + FRAME_TOKENS * len(history))
    assert {ids[s["seq"]] for s in rendered["stats"]["skipped"] if s["reason"] == "outside_fork_range"} == {
        ordinary[3]["id"], *(m["id"] for m in ordinary[-3:])}
    assert [(m["id"], m["content"]) for m in exported["messages"]] == [
        (m.id, m.raw_dict["content"]) for m in theirs.messages]
    # unchanged, the context exports as it was imported, its lagging counter included
    assert thread_to_peteos(thread=thread) == raw


def test_windows_of_a_context_with_a_lagging_counter_keep_out_what_peteos_keeps_out(
    workspace, actor, ordered_dangling_check
):
    """peteos' rolling windows select messages numbered in [start, _mutation_counter): in a
    context imported with a counter lagging its messages' numbers, the messages past it are in
    no window, by count or by tokens, and ours leave out the same ones."""
    raw = plain(thinking_mix(9).raw_dict)
    ordinary = [m for m in raw["messages"] if m["id"] != raw["system_prompt_message_id"]]
    raw["_mutation_counter"] = ordinary[-3]["_sequence_number"]  # the last three are past it
    thread = thread_import(workspace=workspace, data=copy.deepcopy(raw), actor=actor)
    past = {m["id"] for m in ordinary[-3:]}
    checked = 0

    def same(theirs, ours, label):
        assert ours["covers_all"] == (theirs is None), label
        if theirs is not None:
            special = {theirs.system_prompt_message, theirs.tool_definitions_message}
            picked = {m.id for m in theirs.messages if m not in special}
            assert not picked & past, label
            assert {e.data["peteos"]["id"] for e in ours["events"]} == picked, label

    for count in range(0, len(ordinary) + 1):
        theirs = Context.load_from_dict(copy.deepcopy(raw)).rolling_sequence_window(count)
        same(theirs, windows.window_by_count(thread=thread, count=count), count)
        checked += theirs is not None
    total = windows.total_tokens(thread=thread)
    for budget in range(0, total + 2, 5):
        theirs = Context.load_from_dict(copy.deepcopy(raw)).rolling_token_window(budget)
        same(theirs, windows.window_by_tokens(thread=thread, max_tokens=budget), budget)
        checked += theirs is not None
    assert checked > 10
