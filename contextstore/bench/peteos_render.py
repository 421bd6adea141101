"""A peteos thread's render at two history lengths: does its cost follow the budget?

    python manage.py bench_peteos_render --sizes 1000,50000

Imports a peteos context (``Context.raw_dict``, two anchors, appends at both, thinking in the
assistant messages) of each size, then renders it (openai, and raw with strip_thinking) with a
fixed budget, fresh each time (reuse=False: nothing kept from the render before), and prints
the median time and the event rows each render read. Writes to the configured database; the
threads are left for inspection in a session named bench-peteos-<size>-<random>.
"""

import statistics
import time
import uuid
from typing import Any

from django.core.management.base import OutputWrapper
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore.models import Thread
from contextstore.selectors import rendering
from contextstore.services.common import Actor
from contextstore.services.transfer import thread_import
from contextstore.services.workspaces import workspace_ensure


def peteos_context(size: int) -> dict[str, Any]:
    """A peteos context of `size` ordinary messages: every tenth appended at the earlier anchor
    ("notes"), so display order is not creation order."""
    system = {"role": "system", "content": [{"type": "text", "text": "You are careful."}],
              "_type": "SystemPromptMessage", "id": "sys", "_sequence_number": 0}
    tools = {"role": "system", "content": [], "_type": "ToolDefinitionsMessage", "id": "tools",
             "_sequence_number": 1}
    notes: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for n in range(size):
        role = "user" if n % 2 == 0 else "assistant"
        content: list[dict[str, Any]] = [{"type": "text", "text": f"message {n}: " + "word " * 40}]
        if role == "assistant":
            content.insert(0, {"type": "thinking", "thinking": "think " * 10})
        message = {"role": role, "content": content, "_type": "Message", "id": f"m{n}",
                   "_hook_ids": [], "_sequence_number": n + 2}
        (notes if n % 10 == 5 else rest).append(message)
    messages = [system, tools, *notes, *rest]
    return {"messages": messages, "id": f"bench-{uuid.uuid4().hex[:8]}", "content_map": {},
            "anchor_points": [["notes", 2 + len(notes)], ["messages", len(messages)]],
            "message_sequence": size + 2, "_mutation_counter": size + 2, "children": [],
            "system_prompt_message_id": "sys", "tool_definitions_message_id": "tools"}


def _event_rows(queries: list[dict[str, Any]]) -> int:
    """How many statements read the events table."""
    return sum(1 for q in queries if "contextstore_event" in q["sql"] and q["sql"].lstrip().upper()
               .startswith("SELECT"))


class PeteosRenderBench:
    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, sizes: list[int], samples: int, max_tokens: int) -> dict[int, dict[str, float]]:
        actor = Actor.system("bench_peteos_render")
        workspace, _ = workspace_ensure(slug="bench")
        results: dict[int, dict[str, float]] = {}
        for size in sizes:
            started = time.perf_counter()
            thread = thread_import(workspace=workspace, data=peteos_context(size), actor=actor,
                                   session_key=f"bench-peteos-{size}-{uuid.uuid4().hex[:6]}")
            self.stdout.write(f"{size} events imported in {time.perf_counter() - started:.1f} s")
            results[size] = {}
            for label, options in (("openai", {"fmt": "openai"}),
                                   ("raw strip_thinking", {"fmt": "raw", "strip_thinking": True})):
                times, statements = [], 0
                for _ in range(samples):
                    fresh = Thread.objects.get(pk=thread.pk)
                    with CaptureQueriesContext(connection) as queries:
                        t0 = time.perf_counter()
                        body = rendering.render(thread=fresh, max_tokens=max_tokens, reuse=False,
                                                **options).body
                        times.append(time.perf_counter() - t0)
                    statements = _event_rows(queries.captured_queries)
                median = statistics.median(times) * 1000
                results[size][label] = median
                self.stdout.write(f"  {label}: {median:.1f} ms median of {samples}, "
                                  f"{len(body['messages'])} messages, {statements} queries on events")
        if len(sizes) > 1:
            small, large = sizes[0], sizes[-1]
            for label in results[small]:
                self.stdout.write(f"{label}: {large} / {small} events = "
                                  f"{results[large][label] / results[small][label]:.2f}x")
        return results
