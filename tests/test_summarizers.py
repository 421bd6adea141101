"""The summarizer backends on their own: text in, text out, no database."""

import contextlib
import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.demo_turns import TASKS, turn_events
from contextstore.models import Event
from contextstore.services.summaries import event_item
from contextstore.summarizers import Item, SummarizerError, extractive
from contextstore.summarizers import openai as openai_backend
from contextstore.tokens import count_tokens

TASK = ("Migrate the billing service from the legacy Stripe charges API to PaymentIntents "
        "without double-charging anyone. Keep the refund flow working.")
FINAL_DECISION = ("We decided to ship the migration behind the billing_intents feature flag and "
                  "roll it out to 5% of accounts first.")
FATAL_ERROR = ("stripe.error.CardError: Your card does not support this type of purchase "
               "(code card_not_supported) while confirming pi_3MtwBw.")


def coding_transcript(turns: int = 120, seed: int = 7) -> list[Item]:
    """A realistic coding-agent session: a task, exploration, tool calls and results, a few
    errors, intermediate ideas, and a final decision near the end."""
    rng = random.Random(seed)
    files = ["billing/charges.py", "billing/refunds.py", "billing/webhooks.py", "api/views.py",
             "tests/test_refunds.py", "settings/stripe.py"]
    ideas = [
        "The webhook handler assumes a charge id, but PaymentIntents send pi_ ids.",
        "Refunds are created from charge ids, so we need the latest_charge of each intent.",
        "Idempotency keys are derived from the order id, which keeps retries safe.",
        "The test suite mocks stripe.Charge.create directly; those mocks must move.",
        "Currency amounts are stored in cents everywhere except the invoice export.",
        "Maybe we could call both APIs during the rollout and compare the results.",
    ]
    items = [Item(1, "Task", TASK, role="user")]
    seq = 1
    for turn in range(turns):
        seq += 1
        path = rng.choice(files)
        items.append(Item(seq, "Reasoning", f"Turn {turn}: reading {path}. {rng.choice(ideas)}",
                          role="assistant"))
        seq += 1
        items.append(Item(seq, "ToolCall", json.dumps({"path": path}), role="assistant",
                          name="read_file"))
        seq += 1
        lines = rng.randint(40, 400)
        items.append(Item(seq, "ToolResult", f"Read {lines} lines from {path}. "
                          f"Found {rng.randint(0, 9)} references to stripe.Charge.", role="tool",
                          name="read_file"))
        if turn % 17 == 5:
            seq += 1
            items.append(Item(seq, "Error", f"pytest: {rng.randint(1, 6)} failed in "
                              f"tests/test_refunds.py (AssertionError: refund amount 0 != 1299)."))
        if turn % 29 == 11:
            seq += 1
            items.append(Item(seq, "ToolResult", "ImportError: cannot import name "
                              "'PaymentIntent' from partially initialised module 'billing.intents'",
                              role="tool", name="run_tests", is_error=True))
        if turn == turns // 3:
            seq += 1
            items.append(Item(seq, "Message", "Let's use the latest_charge field for refunds "
                              "instead of storing charge ids.", role="assistant"))
    seq += 1
    items.append(Item(seq, "Error", FATAL_ERROR))
    seq += 1
    items.append(Item(seq, "ToolResult", "All 212 tests passed in 48.2s.", role="tool",
                      name="run_tests"))
    seq += 1
    items.append(Item(seq, "LLMOutput", FINAL_DECISION + " The old charges code stays until the "
                      "flag reaches 100%.", role="assistant"))
    return items


def support_transcript() -> list[Item]:
    """A customer-support chat with no explicit Task event: the first user message is the ask."""
    return [
        Item(1, "Message", "Hi, my order #48213 arrived damaged and I want a replacement, not a "
             "refund.", role="user"),
        Item(2, "Message", "Sorry to hear that! Could you send a photo of the damage?",
             role="assistant"),
        Item(3, "Message", "Sure, photo attached. The box was crushed on one side.", role="user"),
        Item(4, "ToolCall", '{"order": 48213}', role="assistant", name="lookup_order"),
        Item(5, "ToolResult", "Order 48213: 1x ceramic vase, shipped 2024-03-02 via DHL, "
             "delivered 2024-03-05.", role="tool", name="lookup_order"),
        Item(6, "ToolResult", "Replacement stock check failed: warehouse API returned 503.",
             role="tool", name="check_stock", is_error=True),
        Item(7, "Message", "The vase is back in stock next Tuesday. We decided to ship the "
             "replacement by express at no cost once it arrives.", role="assistant"),
        Item(8, "Message", "Great, thank you.", role="user"),
    ]


def test_it_keeps_the_task_errors_and_final_decision_of_a_long_session():
    items = coding_transcript()
    total = sum(count_tokens(i.text) for i in items)
    summary = extractive.summarize(items, max_tokens=500)
    assert total > 8 * 500  # a real compression, not a copy
    assert count_tokens(summary.text) <= 500
    assert summary.backend == "extractive"
    text = summary.text
    assert f"Task: {TASK}" in text
    assert FINAL_DECISION in text
    assert "card_not_supported" in text  # the last error
    assert "All 212 tests passed" in text  # the final tool outcome
    assert "latest_charge" in text  # an earlier decision
    assert text.startswith(f"Summary of {len(items)} events (#1–#{items[-1].seq}):")
    assert "Left out:" in text and "other sentences" in text


def seed_demo_items(turns: int, seed: int = 3) -> list[Item]:
    """seed_demo's agent turns, turned into what the worker hands a summarizer (thinking
    stripped, tool names and error flags read from the event)."""
    rng = random.Random(seed)
    raw = [{"type": "Task", "role": "user", "content": TASKS[0]}]
    for i in range(turns):
        raw += turn_events(rng, i, f"run-{i // 10}", f"call-{i}")
    events = [Event(seq=n, position=n, type=e["type"], role=e.get("role", ""),
                    content=e.get("content", ""), parts=e.get("parts"), data=e.get("data"))
              for n, e in enumerate(raw, 1) if e["type"] not in ("LLMCallStart", "LLMComplete")]
    return [event_item(e) for e in events]


def test_it_keeps_what_matters_in_seed_demo_sessions():
    items = seed_demo_items(150)
    summary = extractive.summarize(items, max_tokens=600)
    text = summary.text
    assert count_tokens(text) <= 600
    assert f"Task: {TASKS[0]}" in text
    errors = [i for i in items if i.type == "Error"]
    assert errors and errors[-1].text in text  # the latest error, verbatim
    assert "The decision is to move the job to the primary and add exponential backoff." in text
    assert "Tool outcomes:" in text and "Left out:" in text


def test_it_is_not_a_truncation_of_the_beginning():
    items = coding_transcript()
    summary = extractive.summarize(items, max_tokens=400)
    kept = [int(s.split("]")[0]) for s in summary.text.split("[#")[1:]]
    assert max(kept) > items[-1].seq * 0.9  # the end of the range is represented


@pytest.mark.parametrize("cap", [64, 120, 300, 1000, 4000])
def test_the_cap_holds_for_any_budget(cap):
    for items in (coding_transcript(200), seed_demo_items(300)):
        summary = extractive.summarize(items, max_tokens=cap)
        assert 0 < count_tokens(summary.text) <= cap


def test_it_is_deterministic():
    items = coding_transcript()
    assert extractive.summarize(items, max_tokens=300).text == extractive.summarize(
        items, max_tokens=300).text


def test_without_a_task_event_the_first_user_message_is_the_task():
    text = extractive.summarize(support_transcript(), max_tokens=200).text
    assert "Task: Hi, my order #48213 arrived damaged" in text
    assert "warehouse API returned 503" in text
    assert "ship the replacement by express" in text


def test_repeated_errors_are_folded_and_counted():
    items = [Item(1, "Task", "Keep the importer running.")] + [
        Item(i, "Error", f"ConnectionResetError: peer reset the connection (attempt {i}).")
        for i in range(2, 40)
    ]
    text = extractive.summarize(items, max_tokens=200).text
    assert text.count("ConnectionResetError") == 1
    assert "similar)" in text


def test_a_summary_of_summaries_keeps_the_original_task():
    items = coding_transcript()
    first = extractive.summarize(items, max_tokens=400).text
    later = [Item(1, "Summary", first, role="system")] + [
        Item(500 + i, "Message", f"Follow-up turn {i} about the rollout dashboard.", role="user")
        for i in range(40)
    ]
    second = extractive.summarize(later, max_tokens=300).text
    assert f"Task: {TASK}" in second
    assert second.startswith(f"Summary of {len(items) + 40} events")
    assert count_tokens(second) <= 300


def test_an_empty_or_textless_range_still_gives_a_short_summary():
    text = extractive.summarize([Item(3, "ToolCall", "", name="noop")], max_tokens=64).text
    assert text == "Summary of 1 event (#3–#3): 1 ToolCall."


# --- openai backend against a local chat-completions server -----------------------------------

class ChatServer(ThreadingHTTPServer):
    daemon_threads = True
    mode = "ok"
    requests: list[dict]


class ChatHandler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, "body": body,
                                     "auth": self.headers.get("Authorization")})
        mode = self.server.mode
        if mode == "flaky" and len(self.server.requests) == 1:
            mode = "500"
        if mode == "500":
            return self._send(500, b'{"error": {"message": "overloaded"}}')
        if mode == "401":
            return self._send(401, b'{"error": {"message": "bad key"}}')
        if mode == "slow":
            time.sleep(1.0)
        if mode == "malformed":
            return self._send(200, b'{"choices": []}')
        if mode == "not-json":
            return self._send(200, b"<html>gateway</html>")
        reply = {
            "id": "chatcmpl-1", "object": "chat.completion", "model": "tiny-summarizer-1",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "The agent migrated billing."}}],
            "usage": {"prompt_tokens": 812, "completion_tokens": 9, "total_tokens": 821},
        }
        self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer(("127.0.0.1", 0), ChatHandler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def endpoint_for(server: ChatServer, **overrides) -> openai_backend.Endpoint:
    options = {"base_url": f"http://127.0.0.1:{server.server_port}/v1", "model": "tiny-summarizer",
               "api_key": "sk-test", "timeout": 0.3, "retries": 2, "backoff": 0.01,
               "price_input_per_mtok": 0.15, "price_output_per_mtok": 0.6, **overrides}
    return openai_backend.Endpoint(**options)


def test_openai_returns_the_completion_with_usage_and_cost(chat_server):
    summary = openai_backend.summarize(coding_transcript(10), max_tokens=200,
                                       endpoint=endpoint_for(chat_server))
    assert summary.text == "The agent migrated billing."
    assert summary.backend == "openai" and summary.model == "tiny-summarizer-1"
    assert summary.usage == {"prompt_tokens": 812, "completion_tokens": 9, "total_tokens": 821,
                             "condensed_input": False}
    assert summary.cost == pytest.approx((812 * 0.15 + 9 * 0.6) / 1e6)
    (request,) = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "tiny-summarizer" and request["body"]["max_tokens"] == 200
    assert f"[#1] Task/user: {TASK}" in request["body"]["messages"][1]["content"]


def test_openai_retries_a_500_then_succeeds(chat_server):
    chat_server.mode = "flaky"
    summary = openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                       endpoint=endpoint_for(chat_server))
    assert summary.text == "The agent migrated billing."
    assert len(chat_server.requests) == 2


def test_openai_fails_after_its_retries_on_500(chat_server):
    chat_server.mode = "500"
    with pytest.raises(SummarizerError, match="HTTP 500"):
        openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                 endpoint=endpoint_for(chat_server))
    assert len(chat_server.requests) == 3


def test_openai_does_not_retry_a_bad_key(chat_server):
    chat_server.mode = "401"
    with pytest.raises(SummarizerError, match="HTTP 401"):
        openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                 endpoint=endpoint_for(chat_server))
    assert len(chat_server.requests) == 1


def test_openai_times_out(chat_server):
    chat_server.mode = "slow"
    started = time.monotonic()
    with pytest.raises(SummarizerError, match="timed out after 0.3s"):
        openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                 endpoint=endpoint_for(chat_server, retries=1))
    assert time.monotonic() - started < 2.0
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize("mode", ["malformed", "not-json"])
def test_openai_refuses_a_malformed_body(chat_server, mode):
    chat_server.mode = mode
    with pytest.raises(SummarizerError, match="malformed response"):
        openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                 endpoint=endpoint_for(chat_server, retries=0))


def test_openai_condenses_an_input_larger_than_its_limit(chat_server):
    openai_backend.summarize(coding_transcript(200), max_tokens=100,
                             endpoint=endpoint_for(chat_server, max_input_tokens=500))
    prompt = chat_server.requests[0]["body"]["messages"][1]["content"]
    assert count_tokens(prompt) < 600
    assert "Task: " + TASK in prompt


def test_openai_unreachable_endpoint_is_a_summarizer_error():
    endpoint = openai_backend.Endpoint(base_url="http://127.0.0.1:9/v1", model="m", retries=0,
                                       timeout=0.5)
    with pytest.raises(SummarizerError, match="could not reach"):
        openai_backend.summarize(coding_transcript(3), max_tokens=50, endpoint=endpoint)


@given(
    texts=st.lists(st.text(min_size=0, max_size=400), min_size=1, max_size=30),
    types=st.lists(st.sampled_from(["Task", "Message", "Error", "ToolResult", "LLMOutput",
                                    "Summary"]), min_size=30, max_size=30),
    cap=st.integers(min_value=1, max_value=400),
)
def test_the_cap_holds_for_any_text(texts, types, cap):
    items = [Item(i + 1, types[i], text) for i, text in enumerate(texts)]
    assert count_tokens(extractive.summarize(items, max_tokens=cap).text) <= cap


# --- a trickling endpoint: SUMMARIZER_TIMEOUT bounds the whole call, not each read ------------

class TrickleHandler(BaseHTTPRequestHandler):
    """Answers 200 at once, then one byte of a valid completion per second."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append(time.monotonic())
        body = json.dumps({"choices": [{"message": {"content": "late " * 40}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1.0)
        except OSError:
            pass  # the client gave up, as it should


@contextlib.contextmanager
def serving_a_trickle() -> Iterator[ChatServer]:
    server = ChatServer(("127.0.0.1", 0), TrickleHandler)
    server.block_on_close = False  # a handler may still be trickling to a client that left
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def trickle_server() -> Iterator[ChatServer]:
    with serving_a_trickle() as server:
        yield server


@pytest.mark.slow
def test_a_trickling_endpoint_times_out_at_the_deadline_of_each_call(trickle_server):
    started = time.monotonic()
    with pytest.raises(SummarizerError, match="timed out after 2.0s"):
        openai_backend.summarize(coding_transcript(5), max_tokens=100,
                                 endpoint=endpoint_for(trickle_server, timeout=2.0, retries=1,
                                                       backoff=0.01))
    elapsed = time.monotonic() - started
    assert len(trickle_server.requests) == 2  # each attempt got its own 2 s
    assert 3.0 <= elapsed <= 8.0, elapsed  # not the 250 s the trickle lasts; margin for load
