"""Realistic agent turns as event dicts: a model call with its thinking, a tool call and its
result, now and then an error, feedback or code output. The demo workspace's history
(seed_demo), the summarize benchmark's and the summarizer tests' input. Pure: no database."""

import random
from typing import Any

TASKS = [
    "Find out why the nightly export job failed and propose a fix.",
    "Review the pull request that adds rate limiting to the upload endpoint.",
    "Summarise recent papers on retrieval-augmented generation for legal documents.",
    "Plan a three-day trip to Lisbon in March with a budget of 900 euros.",
    "Migrate the billing service's cron jobs to the new scheduler.",
    "Answer the customer's question about duplicate charges on invoice 4411.",
]
TOOLS = ["search_logs", "read_file", "run_tests", "web_search", "query_db", "calendar_lookup"]
SENTENCES = [
    "The export job reads from the replica, which lagged by forty minutes last night.",
    "I checked the retry policy and it gives up after three attempts without backoff.",
    "The decision is to move the job to the primary and add exponential backoff.",
    "Tests in test_upload.py cover the happy path but not the burst case.",
    "The user prefers morning flights and vegetarian restaurants.",
    "Two charges share the same idempotency key, so the second one should have been refused.",
    "The scheduler supports cron syntax, so the migration is mostly mechanical.",
    "Three papers report gains from chunking by section rather than by fixed length.",
    "I will open a ticket for the missing index on invoices(customer_id).",
    "The budget allows a mid-range hotel near Baixa for three nights.",
]
ERRORS = [
    "TimeoutError: query_db exceeded 30s",
    "HTTP 429 from web_search: rate limited, retry after 12s",
    "FileNotFoundError: config/scheduler.yaml",
]


def turn_events(rng: random.Random, i: int, run_id: str, call_id: str) -> list[dict[str, Any]]:
    """The events of one turn `i` of run `run_id`, model call `call_id`."""
    tool = rng.choice(TOOLS)
    call = f"call_{i}"
    thinking = " ".join(rng.sample(SENTENCES, 2))
    said = " ".join(rng.sample(SENTENCES, 3))
    cost = round(rng.uniform(0.0004, 0.004), 6)
    events: list[dict[str, Any]] = [
        {"type": "LLMCallStart", "run_id": run_id, "call_id": call_id, "data": {"model": "gpt-4o-mini"}},
        {"type": "Reasoning", "role": "assistant", "run_id": run_id, "call_id": call_id,
         "content": "", "parts": [{"type": "thinking", "thinking": thinking}]},
        {"type": "ToolCall", "role": "assistant", "run_id": run_id, "call_id": call_id,
         "content": f"Calling {tool}", "parts": [{"type": "tool_call", "id": call, "name": tool,
                                                   "arguments": {"query": said[:60]}}]},
        {"type": "ToolResult", "role": "tool", "run_id": run_id, "call_id": call_id,
         "content": rng.choice(SENTENCES), "data": {"tool_call_id": call, "ok": True}},
        {"type": "LLMOutput", "role": "assistant", "run_id": run_id, "call_id": call_id,
         "content": said, "parts": [{"type": "thinking", "thinking": thinking},
                                    {"type": "text", "text": said}]},
        {"type": "LLMComplete", "run_id": run_id, "call_id": call_id,
         "data": {"model": "gpt-4o-mini", "input_tokens": rng.randint(800, 4000),
                  "output_tokens": rng.randint(60, 400), "cost": cost}},
    ]
    if rng.random() < 0.12:
        events.append({"type": "Error", "role": "system", "run_id": run_id, "call_id": call_id,
                       "content": rng.choice(ERRORS)})
    if rng.random() < 0.2:
        events.append({"type": "Feedback", "role": "user", "run_id": run_id,
                       "content": "Good, but keep it shorter next time."})
    if rng.random() < 0.1:
        events.append({"type": "PythonOutput", "role": "tool", "run_id": run_id,
                       "content": "rows=1204 duplicates=2 elapsed=0.41s"})
    return events


def run_events(rng: random.Random, batch: list[dict[str, Any]], count: int, *,
               step_results: bool = True) -> list[dict[str, Any]]:
    """`batch` grown past `count` events with agent runs: each run a user's follow-up and five
    turns (turn_events), opened and closed by Before/AfterAgentCall, its answer a StepResult
    unless `step_results` is off."""
    turn = 0
    while len(batch) < count:
        run_id = f"run-{turn // 5 + 1}"
        call_id = f"{run_id}.solve"
        if turn % 5 == 0:
            batch.append({"type": "BeforeAgentCall", "run_id": run_id, "call_id": call_id})
            batch.append({"type": "Message", "role": "user", "run_id": run_id,
                          "content": f"Follow-up {turn // 5 + 1}: {rng.choice(SENTENCES)}"})
        batch.extend(turn_events(rng, turn, run_id, call_id))
        if turn % 5 == 4:
            if step_results:
                batch.append({"type": "StepResult", "role": "assistant", "run_id": run_id,
                              "step": "answer", "content": rng.choice(SENTENCES)})
            batch.append({"type": "AfterAgentCall", "run_id": run_id, "call_id": call_id})
        turn += 1
    return batch
