"""Agent Framework: the seed's UserInfoMemory example with contextstore as its storage."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from contextstore.adapters.agent_framework import ContextStoreSessionStore
from tests.adapters.agent_framework_fakes import turn

ROOT = Path(__file__).resolve().parents[2]
SEED_TURNS = ("Hello, what is the square root of 9?", "My name is Ruaidhri", "I am 20 years old")


def turn_elsewhere(url: str, token: str, text: str) -> str:
    script = (
        "import asyncio, sys\n"
        "from contextstore.client import ContextStore\n"
        "from tests.adapters.agent_framework_fakes import turn\n"
        "with ContextStore(sys.argv[1], sys.argv[2]) as cs:\n"
        "    print(asyncio.run(turn(cs, 'ruaidhri', 'chat-1', sys.argv[3])))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", script, url, token, text], capture_output=True,
                          text=True, env=env, timeout=120, check=True)
    return done.stdout.strip()


def test_the_seed_user_info_memory_example_runs_on_contextstore(store):
    answers = [asyncio.run(turn(store, "ruaidhri", "chat-1", text)) for text in SEED_TURNS]

    # Before it knows the name it is told to ask; then the memory shows in its instructions.
    assert "Ask the user for their name" in answers[0]
    assert "The user's name is Ruaidhri." in answers[2]
    assert "Ask the user for their age" in answers[2]
    assert answers[0].startswith("1 messages") and answers[2].startswith("5 messages")
    memories = {m.key: m.data for m in store.recall(user_id="ruaidhri")}
    assert memories == {"name": {"name": "Ruaidhri"}, "age": {"age": 20}}
    thread = store.thread("chat-1", user_id="ruaidhri")
    assert thread.provider_state("user_info_memory").state == {
        "user_info": {"name": "Ruaidhri", "age": 20}}
    assert [(e.role, e.content) for e in thread.events()][:2] == [
        ("user", SEED_TURNS[0]), ("assistant", answers[0])]


def test_a_new_process_resumes_the_session(live_server, store, token):
    for text in SEED_TURNS:
        asyncio.run(turn(store, "ruaidhri", "chat-1", text))

    answer = turn_elsewhere(live_server.url, token[1], "What do you know about me?")

    # Six earlier messages plus the new one, and what it learned in the first process.
    assert answer.startswith("7 messages")
    assert "The user's name is Ruaidhri." in answer and "The user's age is 20." in answer
    session = asyncio.run(ContextStoreSessionStore(store, user_id="ruaidhri").get("chat-1"))
    assert session.state["user_info_memory"]["user_info"] == {"name": "Ruaidhri", "age": 20}


def test_blocks_summary_and_collapses_reach_the_agent(store):
    for text in SEED_TURNS[:2]:
        asyncio.run(turn(store, "ruaidhri", "chat-2", text))
    thread = store.thread("chat-2", user_id="ruaidhri")
    thread.put_block("policy", value="Answer in one sentence.", placement="prefix")
    thread.collapse(1, 2, "The user asked about a square root.")

    answer = asyncio.run(turn(store, "ruaidhri", "chat-2", "Thanks"))

    assert "Answer in one sentence." in answer
    # The summary replaces two messages: summary, 2 messages of turn two, the new one.
    assert answer.startswith("4 messages")


def test_a_message_written_by_someone_else_joins_the_conversation(store):
    asyncio.run(turn(store, "ruaidhri", "chat-4", "hi"))
    thread = store.thread("chat-4", user_id="ruaidhri")
    thread.append_one("Message", "Note from the operator: be brief.", role="user")

    answer = asyncio.run(turn(store, "ruaidhri", "chat-4", "ok"))

    assert answer.startswith("4 messages")  # hi, its answer, the note, the new input


def test_a_deleted_session_snapshot_reads_as_absent(store):
    sessions = ContextStoreSessionStore(store, user_id="ruaidhri")
    asyncio.run(turn(store, "ruaidhri", "chat-3", "hi"))
    assert asyncio.run(sessions.get("chat-3")) is not None

    asyncio.run(sessions.delete("chat-3"))

    assert asyncio.run(sessions.get("chat-3")) is None
