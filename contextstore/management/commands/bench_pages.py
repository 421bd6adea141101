"""Server time of the dashboard's thread page against history length.

    python manage.py bench_pages                  # 1k and 100k events, 30 requests each
    DATABASE_URL=postgres://... python manage.py bench_pages

Threads live in a workspace `bench-pages` and are reused between runs (--fresh rebuilds them).
Each request goes through the whole Django stack in-process (middleware, auth, views,
templates), so the figure is the server's share of a page load, without the network.
"""

import statistics
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import connection
from django.test import Client

from contextstore.models import Session, Thread
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.workspaces import workspace_ensure

BATCH = 1000
BODY = ("The export job reads from the replica which lagged by forty minutes, so the retry "
        "policy gave up after three attempts; we move it to the primary and add backoff. ")


def event(i: int) -> dict:
    kind = "Error" if i % 97 == 0 else "ToolCall" if i % 13 == 0 else "Message"
    return {"type": kind, "role": "user" if i % 2 else "assistant", "content": f"turn {i}: {BODY}",
            "data": {"tool": "search", "i": i} if kind == "ToolCall" else None}


def summary(samples: list[float]) -> str:
    samples = sorted(samples)
    p90 = samples[max(int(len(samples) * 0.9) - 1, 0)]
    return f"{statistics.median(samples):6.1f} / {p90:6.1f}"


class Command(BaseCommand):
    help = "Benchmark the thread page (full page, older page, live tail) for 1k vs 100k events."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="1000,100000")
        parser.add_argument("--repeat", type=int, default=30)
        parser.add_argument("--fresh", action="store_true")

    def handle(self, *args, sizes: str, repeat: int, fresh: bool, **options):
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
            headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
            start = time.perf_counter()
            response = client.get(path, params, secure=True, **headers)
            elapsed = (time.perf_counter() - start) * 1000
            assert response.status_code == 200, response.status_code
            return elapsed

        samples = {n: {"page": [], "older": [], "tail": []} for n in threads}
        for thread in threads.values():
            get(f"/threads/{thread.pk}/")  # warm caches and the session row
        for _ in range(repeat):
            for n, thread in threads.items():
                url = f"/threads/{thread.pk}/"
                samples[n]["page"].append(get(url))
                samples[n]["older"].append(get(url, True, before=max(thread.last_seq - 500, 2)))
                samples[n]["tail"].append(get(url, True, after=thread.last_seq))
        for n, figures in samples.items():
            self.stdout.write(
                f"{n:>7} events  page {summary(figures['page'])}   older page "
                f"{summary(figures['older'])}   live tail {summary(figures['tail'])}")
        if len(samples) > 1:
            small, large = min(samples), max(samples)
            ratio = statistics.median(samples[large]["page"]) / statistics.median(samples[small]["page"])
            self.stdout.write(f"page ratio {large} vs {small} events: {ratio:.2f}x")

    def _thread(self, workspace, n: int, actor: Actor) -> Thread:
        """A thread with n events, a collapse in the middle, blocks and a few state revisions."""
        session, _ = session_ensure(workspace=workspace, key=f"bench-{n}", agent="bench", actor=actor)
        thread, _ = thread_ensure(session=session, actor=actor)
        if thread.last_seq >= n:
            return thread
        start = thread.last_seq
        self.stdout.write(f"seeding {n} events…")
        for offset in range(start, n, BATCH):
            event_append(thread=thread, actor=actor,
                         events=[event(i) for i in range(offset, min(offset + BATCH, n))])
        collapse_create(thread=thread, start_position=n // 3, end_position=n // 3 + 50,
                        summary_text="An earlier stretch, summarized.", actor=actor)
        block_upsert(thread=thread, name="persona", value="You are a careful operator.",
                     placement="prefix", actor=actor)
        block_upsert(thread=thread, name="goal", expr="{{ state.goal }}", actor=actor)
        for i in range(5):
            state_write(thread=thread, state={"goal": f"step {i}", "done": list(range(i))},
                        actor=actor)
        if connection.vendor == "postgresql":
            # What autovacuum does after a bulk load; without statistics the planner guesses.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE contextstore_event")
        thread.refresh_from_db()
        return thread
