"""The peteos adapter against a live contextstore: save_context / load_context over HTTP."""

import json

import pytest
from contextstore_client import ContextStore
from contextstore_client.adapters.peteos import load_context, save_context
from peteos.conversation.context import Context
from peteos.conversation.message import ContentPart, Message, ToolApprovalStatus

from contextstore.models import Collapse
from contextstore.tokens import FRAME_TOKENS
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


# ---------------------------------------------------------------- sync: people, processes, size

def seen_by_model(ctx: Context) -> list[tuple[str, str]]:
    """What a model call built from the context receives: each message's role and text."""
    return [(str(m.role), m.printable()) for m in ctx.messages]


def fresh_context() -> Context:
    from peteos.conversation.system_prompt_message import SystemPromptMessage

    return Context.create(SystemPromptMessage.create("Be brief."))


def agent_turn(ctx: Context, text_in: str, seen: list) -> None:
    """The scripted agent: the user speaks, the model answers from what it was shown."""
    ctx.append(text("user", text_in))
    seen.append(seen_by_model(ctx))
    ctx.append(text("assistant", f"seen {len(ctx.messages)}; last: {text_in}"))


SCRIPT = ["hi", "my name is Ann", "what is 2+2?", "thanks", "summarise us", "bye"]
NOTE = "NOTE: the user prefers metric units"
SUMMARY = "The user greeted and gave a name."


def test_the_model_sees_the_same_transcript_as_on_peteos_own_files(live_server, store, token,
                                                                   tmp_path):
    # peteos alone: Context.save / Context.load, the person's actions as documented in
    # docs/frameworks/peteos.md (a note: a user message last; a collapse: one system message
    # with the summary in place of the range; a clear: no messages, the slots stay).
    expected: list = []
    path = None
    for number, said in enumerate(SCRIPT):
        ctx = Context.load(str(path)) if path else fresh_context()
        agent_turn(ctx, said, expected)
        ctx.save(tmp_path)
        path = next(tmp_path.glob("*.json"))
        if number in (1, 2, 3):
            ctx = Context.load(str(path))
            rebuilt = Context.create(ctx.system_prompt_message)
            ordinary = [m for m in ctx.messages if m is not ctx.system_prompt_message]
            if number == 1:
                ordinary.append(text("user", NOTE))
            if number == 2:
                ordinary[0:2] = [text("system", SUMMARY)]
            if number == 3:
                ordinary = []
            for message in ordinary:
                rebuilt.append(text(str(message.role), message.printable()))
            rebuilt.raw_dict["id"] = ctx.id
            rebuilt.save(tmp_path)

    # contextstore: two processes (their own long-lived clients) alternate; a person acts
    # through the API between turns.
    actual: list = []
    with ContextStore(live_server.url, token[1]) as second:
        clients = [store, second]
        person = store.thread("peteos-scripted", agent="peteos")
        save_context(fresh_context(), person)
        for number, said in enumerate(SCRIPT):
            thread = clients[number % 2].thread("peteos-scripted", agent="peteos")
            ctx = load_context(thread)
            agent_turn(ctx, said, actual)
            save_context(ctx, thread)
            if number == 1:
                person.append_one("Message", NOTE, role="user")
            if number == 2:
                first = person.events()[:2]
                person.collapse(first[0].seq, first[1].seq, SUMMARY)
            if number == 3:
                person.clear_context()
    assert actual == expected
    final = load_context(store.thread("peteos-scripted", agent="peteos"))
    ids = [m.id for m in final.messages]
    assert len(ids) == len(set(ids)) == 5  # the system prompt and two turns: nothing twice


def test_two_long_lived_clients_take_turns_without_conflicts(live_server, store, token):
    with ContextStore(live_server.url, token[1]) as second:
        for number in range(6):
            thread = (store, second)[number % 2].thread("peteos-turns", agent="peteos")
            ctx = load_context(thread)
            ctx.append(text("user", f"turn {number}"))
            save_context(ctx, thread)
    texts = [m.printable() for m in load_context(store.thread("peteos-turns")).messages]
    assert texts == [f"turn {n}" for n in range(6)]


def test_a_save_on_a_stale_load_is_refused_and_writes_nothing(live_server, store, token):
    from contextstore_client import StaleRevision

    mine = store.thread("peteos-stale", agent="peteos")
    save_context(fresh_context(), mine)
    ctx = load_context(mine)
    with ContextStore(live_server.url, token[1]) as second:
        theirs = second.thread("peteos-stale", agent="peteos")
        other = load_context(theirs)
        other.append(text("user", "theirs"))
        save_context(other, theirs)
    ctx.append(text("user", "mine"))
    before = mine.events(status="all")
    try:
        save_context(ctx, mine)
    except StaleRevision:
        pass
    else:
        raise AssertionError("a save on a stale load must be refused")
    assert mine.events(status="all") == before


def test_5000_messages_in_one_save(store):
    thread = store.thread("peteos-big", agent="peteos")
    ctx = fresh_context()
    for number in range(5000):
        ctx.append(text("user", f"m{number}"))
    save_context(ctx, thread)
    loaded = load_context(thread)
    assert [m.printable() for m in loaded.messages if m is not loaded.system_prompt_message] == [
        f"m{n}" for n in range(5000)]


def test_every_model_call_is_logged_with_the_messages_put_on_the_wire(store):
    import asyncio

    from contextstore_client.adapters.peteos import log_llm_calls
    from peteos.chatbot.chatbotconfig import ChatBotConfig
    from peteos.chatbot.openaichatbot import OpenAIChatBot

    wire: list = []

    async def post(body, headers, hooks=None):  # the HTTP round trip: keep the body, answer
        wire.append(json.loads(json.dumps(body)))
        return {"id": "r", "object": "chat.completion", "model": "gpt-4o", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": f"answer {len(wire)}"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}

    bot = OpenAIChatBot(None, ChatBotConfig(name="t", url="http://x", api_type="openai", model="gpt-4o"))
    bot._post_executor = post
    thread = store.thread("peteos-calls", agent="peteos")
    log_llm_calls(bot, thread)
    ctx = fresh_context()
    for said in ("hi ünïcode", "and again"):
        ctx.append(text("user", said))
        asyncio.run(bot.send_context(ctx, streaming=False))
        ctx.append(text("assistant", f"answer {len(wire)}"))
        save_context(ctx, thread)

    starts = thread.events(type="LLMCallStart")
    assert len(starts) == len(wire) == 2
    for event, body in zip(starts, wire, strict=True):
        call = thread.llm_call(event.seq)
        assert call["messages"] == body["messages"] and call["render_id"] is None
    assert [m["role"] for m in wire[1]["messages"]] == ["system", "user", "assistant", "user"]
    # the logged calls are runtime events: the context loads back as it was saved
    assert seen_by_model(load_context(thread)) == seen_by_model(ctx)


def test_a_strip_thinking_render_of_a_saved_context_agrees_with_peteos(store):
    thread = store.thread("peteos-strip", agent="peteos")
    ctx = conversation()
    ctx.append(Message({"role": "assistant", "content": []}))  # left empty: peteos drops it too
    # A count cached before stripping stays on peteos' stripped copy, thinking included.
    next(m for m in ctx.messages if m.raw_dict["content"][0].get("type") == "thinking").count_tokens()
    save_context(ctx, thread)
    theirs = Context.load_from_dict(plain(ctx.raw_dict)).strip_thinking()
    special = {theirs.system_prompt_message, theirs.tool_definitions_message}
    kept = [m for m in theirs.messages if m not in special]  # in display order, as peteos sends them

    rendered = thread.context(max_tokens=100_000, strip_thinking=True)

    ids = {e.seq: e.data["peteos"]["id"] for e in thread.events()}
    history = [m for m in rendered.messages if m["section"] == "history"]
    assert [ids[m["seq"]] for m in history] == [m.id for m in kept]
    assert [m["tokens"] for m in history] == [Message.from_dict(m.raw_dict).count_tokens() for m in kept]
    # each message as peteos counts it, framed as the render frames every message it sends
    assert rendered.stats["sections"]["history"]["tokens"] == (
        sum(m["tokens"] for m in history) + FRAME_TOKENS * len(history))
    assert thread.total_tokens() == ctx.total_token_count()


def load_save_load(thread) -> tuple[str, str]:
    """The agent's turn without new messages: the JSON it loaded, and the JSON it loads next."""
    ctx = load_context(thread)
    first = json.dumps(ctx.raw_dict)
    save_context(ctx, thread)
    return first, json.dumps(load_context(thread).raw_dict)


@pytest.mark.parametrize("action", ["note", "collapse", "note then collapse"])
def test_after_a_person_acts_load_save_load_gives_the_same_json(store, user, action):
    from contextstore.models import Thread
    from contextstore.services.collapses import collapse_create
    from contextstore.services.common import Actor
    from contextstore.services.events import event_append

    thread = store.thread(f"peteos-person-{action}", agent="peteos")
    save_context(conversation(), thread)
    person, row = Actor.for_user(user), Thread.objects.get(pk=thread.id)
    if "note" in action:  # as a person's note comes in: one event, through the services
        event_append(thread=row, actor=person, events=[
            {"type": "Message", "role": "user", "content": NOTE}])
    if "collapse" in action:  # as the dashboard's collapse form does
        collapse_create(thread=row, start_position=2, end_position=3, summary_text=SUMMARY,
                        actor=person, source=Collapse.Source.PERSON)

    loaded, again = load_save_load(thread)

    assert again == loaded
    assert load_save_load(thread) == (loaded, loaded)  # and it stays so, turn after turn
    ctx = load_context(thread)  # a turn that counts tokens (cached in every message) and talks
    ctx.append(text("assistant", "noted"))
    ctx.total_token_count()
    save_context(ctx, thread)
    assert json.dumps(load_context(thread).raw_dict) == json.dumps(plain(ctx.raw_dict))


def test_after_a_restored_document_the_strip_thinking_render_agrees_with_the_loaded_context(store):
    """Messages saved after the document a person restores stay in the thread: the context loads
    with a _mutation_counter past their numbers (peteos' forks, so its strip_thinking, keep
    them), and the render shows what that context's strip_thinking keeps, message by message."""
    thread = store.thread("peteos-restored", agent="peteos")
    ctx = conversation()
    save_context(ctx, thread)
    first = thread.state().revision
    ctx.append(Message.create("assistant", [ContentPart.create_thinking("weigh it"),
                                            ContentPart.create_text("one more thing")]))
    ctx.append(text("user", "a later question"))
    save_context(ctx, thread)
    thread.restore(first)

    loaded = load_context(thread)
    raw = plain(loaded.raw_dict)
    assert raw["_mutation_counter"] > max(m["_sequence_number"] for m in raw["messages"])
    theirs = Context.load_from_dict(plain(raw)).strip_thinking()
    special = {theirs.system_prompt_message, theirs.tool_definitions_message}
    kept = [m for m in theirs.messages if m not in special]  # in display order, as peteos sends them
    assert kept[-1].printable() == "a later question"

    rendered = thread.context(max_tokens=100_000, strip_thinking=True)

    ids = {e.seq: e.data["peteos"]["id"] for e in thread.events()}
    history = [m for m in rendered.messages if m["section"] == "history"]
    assert [ids[m["seq"]] for m in history] == [m.id for m in kept]
    assert [m["tokens"] for m in history] == [Message.from_dict(m.raw_dict).count_tokens() for m in kept]
    assert rendered.stats["sections"]["history"]["tokens"] == (
        sum(m["tokens"] for m in history) + FRAME_TOKENS * len(history))
    # peteos' next append numbers afresh: no two messages share a sequence number
    loaded.append(text("user", "after the restore"))
    numbers = [m.raw_dict["_sequence_number"] for m in loaded.messages]
    assert len(numbers) == len(set(numbers))


def two_anchor_context() -> Context:
    """Two anchors with appends at both, thinking among them: peteos' display order (the order
    of ``Context.messages``, which its chatbots send) is not its creation order."""
    ctx = conversation()  # appends at "scratch" and at "messages" already
    ctx.add_anchor("plan", ctx.get_anchor_msg_index("scratch"), after_existing=False)
    ctx.append(Message.create("assistant", [ContentPart.create_thinking("plan the next step"),
                                            ContentPart.create_text("a plan kept apart")]),
               anchor_point="plan")
    ctx.append(text("user", "a later question"))
    ctx.append(text("user", "a second scratch note"), anchor_point="scratch")
    ctx.append(Message.create("assistant", [ContentPart.create_thinking("short"),
                                            ContentPart.create_text("the later answer")]))
    return ctx


@pytest.mark.parametrize("strip_thinking", [False, True])
def test_the_render_sends_a_context_with_two_anchors_in_peteos_order(live_server, store, token,
                                                                     strip_thinking):
    """The render lists a peteos context's messages as peteos sends them (its chatbots build the
    request from ``Context.messages``, in display order), message by message and token by token,
    after save_context and a load in another process; the render's record rebuilds the same."""
    from peteos.chatbot.chatbotconfig import ChatBotConfig
    from peteos.chatbot.openaichatbot import OpenAIChatBot

    ctx = two_anchor_context()
    thread = store.thread(f"peteos-anchors-{strip_thinking}", agent="peteos")
    save_context(ctx, thread)
    with ContextStore(live_server.url, token[1]) as other:
        loaded = load_context(other.get_thread(thread.id))
    assert plain(loaded.raw_dict) == plain(ctx.raw_dict)
    theirs = loaded.strip_thinking() if strip_thinking else loaded
    theirs = Context.load_from_dict(plain(theirs.raw_dict))
    special = {theirs.system_prompt_message, theirs.tool_definitions_message}
    sent = [m for m in theirs.messages if m not in special]
    numbers = {m.id: m.raw_dict["_sequence_number"] for m in loaded.messages}
    created = [numbers[m.id] for m in sent]
    assert created != sorted(created)  # display order is not creation order here
    # what peteos' own chatbot puts on the wire follows Context.messages
    bot = OpenAIChatBot(None, ChatBotConfig(name="t", url="http://x", api_type="openai", model="m"))
    wire = [m for m in bot._build_body(theirs, streaming=False)["messages"] if m["role"] != "system"]
    assert len(wire) == len(sent)

    rendered = thread.context(max_tokens=100_000, strip_thinking=strip_thinking)

    ids = {e.seq: e.data["peteos"]["id"] for e in thread.events()}
    history = [m for m in rendered.messages if m["section"] == "history"]
    assert [ids[m["seq"]] for m in history] == [m.id for m in sent]
    assert [m["tokens"] for m in history] == [Message.from_dict(m.raw_dict).count_tokens() for m in sent]
    assert [m.get("parts") for m in history] == [m.raw_dict["content"] for m in sent]
    assert [m["role"] for m in history] == [m["role"] for m in wire]
    assert rendered.stats["sections"]["history"]["tokens"] == (
        sum(m["tokens"] for m in history) + FRAME_TOKENS * len(history))
    # the record keeps the order it rendered: its rebuild gives the same messages
    assert store.render(rendered.render_id).messages == rendered.messages
    # and in the providers' shapes too, the same order
    for fmt in ("openai", "anthropic"):
        shaped = thread.context(max_tokens=100_000, strip_thinking=strip_thinking, format=fmt)
        again = store.render(shaped.render_id)
        assert again.messages == shaped.messages
