"""Server time of the dashboard's thread page against history length.

Figures: the thread page (its newest page holds LLM call cards), an older page, the live tail,
a call's "as sent" view (its render record rebuilt), the jump to seq 1 (a permalink page
around the first event), the session page, the "what the model sees" tab, and the bytes a
thread page with a 100 KB event sends (gzip).

    python manage.py bench_pages                  # 1k and 100k events, 30 requests each
    DATABASE_URL=postgres://... python manage.py bench_pages

Threads live in a workspace `bench-pages` and are reused between runs (--fresh rebuilds them).
Each request goes through the whole Django stack in-process (middleware, auth, views,
templates), so the figure is the server's share of a page load, without the network.
The threads hold agent turns as the demo does (runs of model calls with reasoning, tool calls
and results, errors), so the newest page is made of call cards.
"""

import gzip
import random
import statistics
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import OutputWrapper
from django.db import connection
from django.test import Client

from contextstore.demo_turns import run_events
from contextstore.models import Session, Thread
from contextstore.selectors import rendering
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.renders import render_record
from contextstore.services.runs import run_finish
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.workspaces import workspace_ensure

BATCH = 1000
BODY = ("The export job reads from the replica which lagged by forty minutes, so the retry "
        "policy gave up after three attempts; we move it to the primary and add backoff. ")


def turns(n: int) -> list[dict]:
    """n events of agent runs as seed_demo makes them: each run a user message and five model
    calls with thinking, a tool call and its result, output, now and then an error."""
    return run_events(random.Random(n), [], n, step_results=False)[:n]


def summary(samples: list[float]) -> str:
    samples = sorted(samples)
    p90 = samples[max(int(len(samples) * 0.9) - 1, 0)]
    return f"{statistics.median(samples):6.1f} / {p90:6.1f}"


class PagesBench:
    """bench_pages's measurements, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, sizes: str, repeat: int, fresh: bool) -> None:
        actor = Actor.system("bench_pages")
        workspace, _ = workspace_ensure(slug="bench-pages")
        if fresh:
            for session in Session.objects.filter(workspace=workspace):
                session_delete(session=session, actor=actor)
        user, _ = get_user_model().objects.get_or_create(
            username="bench-pages", defaults={"is_superuser": True, "is_staff": True})
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)

        self.stdout.write(f"database: {connection.vendor}; {repeat} requests per figure, "
                          "sizes interleaved so machine load hits all alike; ms median / p90")
        threads = {int(n): self._thread(workspace, int(n), actor) for n in sizes.split(",")}

        def get(path: str, htmx: bool = False, **params) -> float:
            headers: dict[str, Any] = {"HTTP_HX_REQUEST": "true"} if htmx else {}
            start = time.perf_counter()
            response = client.get(path, params, secure=True, **headers)
            elapsed = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, response.status_code
            return elapsed

        names = ("page", "older", "tail", "sent", "seq1", "session", "model")
        samples: dict[int, dict[str, list[float]]] = {n: {name: [] for name in names} for n in threads}
        for thread in threads.values():
            get(f"/threads/{thread.pk}/")  # warm caches and the session row
        for _ in range(repeat):
            for n, thread in threads.items():
                url = f"/threads/{thread.pk}/"
                samples[n]["page"].append(get(url))
                samples[n]["older"].append(get(url, True, before=max(thread.last_seq - 500, 2)))
                samples[n]["tail"].append(get(url, True, after=thread.last_seq))
                # the newest call: its LLMCallStart names the render record it sent
                samples[n]["sent"].append(get(f"{url}calls/{thread.last_seq - 1}/sent/", True))
                samples[n]["seq1"].append(get(url, around=1))
                samples[n]["session"].append(get(f"/sessions/{thread.session_id}/"))
                samples[n]["model"].append(get(f"{url}context/"))
        for n, figures in samples.items():
            self.stdout.write(
                f"{n:>7} events  page (call cards) {summary(figures['page'])}   older page "
                f"{summary(figures['older'])}   live tail {summary(figures['tail'])}   "
                f"as sent {summary(figures['sent'])}   jump to seq 1 {summary(figures['seq1'])}   "
                f"session page {summary(figures['session'])}   what the model sees "
                f"{summary(figures['model'])}")
        if len(samples) > 1:
            small, large = min(samples), max(samples)
            for name in names:
                ratio = (statistics.median(samples[large][name])
                         / statistics.median(samples[small][name]))
                self.stdout.write(f"{name} ratio {large} vs {small} events: {ratio:.2f}x")
        self._page_size(workspace, client, actor)

    def _page_size(self, workspace, client: Client, actor: Actor) -> None:
        """Bytes of a thread page holding a 100 KB event, as sent (gzip) and unpacked."""
        session, _ = session_ensure(workspace=workspace, key="bench-big-event", actor=actor)
        thread, _ = thread_ensure(session=session, actor=actor)
        if not thread.last_seq:
            big = "".join(f"line {i}: {BODY}\n" for i in range(650))[:100_000]
            event_append(thread=thread, actor=actor, events=[
                {"type": "Message", "content": "before"}, {"type": "ToolResult", "content": big},
                {"type": "Message", "content": "after"}])
        response = client.get(f"/threads/{thread.pk}/", secure=True, HTTP_ACCEPT_ENCODING="gzip")
        sent = len(response.content)
        raw = len(gzip.decompress(response.content)) if response.get("Content-Encoding") == "gzip" else sent
        self.stdout.write(f"thread page with a 100 KB event: {sent / 1024:.1f} KB transferred "
                          f"({response.get('Content-Encoding') or 'identity'}), {raw / 1024:.1f} KB of HTML")

    def _thread(self, workspace, n: int, actor: Actor) -> Thread:
        """A thread with n events of agent runs (turns of demo_turns: model calls, reasoning,
        tool calls and results, errors; all runs but the last finished), a collapse in the
        middle, blocks and a few state revisions."""
        # v3: events are agent turns (older bench threads of plain messages are left alone)
        session, _ = session_ensure(workspace=workspace, key=f"bench-v3-{n}", agent="bench", actor=actor)
        thread, _ = thread_ensure(session=session, actor=actor)
        if thread.last_seq >= n:
            return thread
        start = thread.last_seq
        self.stdout.write(f"seeding {n} events…")
        events = turns(n)
        for offset in range(start, n, BATCH):
            event_append(thread=thread, actor=actor, events=events[offset:offset + BATCH])
        for run in thread.runs.order_by("pk")[: max(thread.runs.count() - 1, 0)]:
            run_finish(run=run, status="completed", actor=actor)
        collapse_create(thread=thread, start_position=n // 3, end_position=n // 3 + 50, widen=True,
                        summary_text="An earlier stretch, summarized.", actor=actor)
        block_upsert(thread=thread, name="persona", value="You are a careful operator.",
                     placement="prefix", actor=actor)
        block_upsert(thread=thread, name="goal", expr="{{ state.goal }}", actor=actor)
        for i in range(5):
            state_write(thread=thread, state={"goal": f"step {i}", "done": list(range(i))},
                        actor=actor)
        thread.refresh_from_db()
        record = render_record(thread=thread, actor=actor,
                               rendered=rendering.render(thread=thread, max_tokens=8000))
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallStart", "call_id": "last", "data": {"model": "gpt-4o-mini",
                                                                 "render_id": str(record.pk)}},
            {"type": "LLMComplete", "call_id": "last", "data": {"model": "gpt-4o-mini",
                                                                "input_tokens": record.total_tokens}}])
        if connection.vendor == "postgresql":
            # What autovacuum does after a bulk load; without statistics the planner guesses.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE contextstore_event")
        thread.refresh_from_db()
        return thread
