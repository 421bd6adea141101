"""Server time of the dashboard's thread page against history length.

    python manage.py bench_pages                  # 1k and 100k events, 30 requests each
    DATABASE_URL=postgres://... python manage.py bench_pages

Threads live in a workspace `bench-pages` and are reused between runs (--fresh rebuilds them).
Each request goes through the whole Django stack in-process (middleware, auth, views,
templates), so the figure is the server's share of a page load, without the network.
"""

import statistics
import time
from collections.abc import Callable

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


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, 90th percentile) wall time of fn in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9) - 1]


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

        self.stdout.write(f"database: {connection.vendor}; {repeat} requests per figure; ms median / p90")
        results: dict[int, float] = {}
        for n in [int(s) for s in sizes.split(",")]:
            thread = self._thread(workspace, n, actor)
            url = f"/threads/{thread.pk}/"

            def get(path: str, htmx: bool = False, **params) -> None:
                headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
                response = client.get(path, params, secure=True, **headers)
                assert response.status_code == 200, response.status_code

            get(url)  # warm caches and the session row
            page = timed(lambda: get(url), repeat)
            older = timed(lambda: get(url, True, before=max(thread.last_seq - 500, 2)), repeat)
            tail = timed(lambda: get(url, True, after=thread.last_seq), repeat)
            results[n] = page[0]
            self.stdout.write(
                f"{n:>7} events  page {page[0]:6.1f} / {page[1]:6.1f}   older page {older[0]:6.1f} / "
                f"{older[1]:6.1f}   live tail {tail[0]:6.1f} / {tail[1]:6.1f}")
        if len(results) > 1:
            small, large = results[min(results)], results[max(results)]
            self.stdout.write(f"page ratio {max(results)} vs {min(results)} events: {large / small:.2f}x")

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
        collapse_create(thread=thread, start_seq=n // 3, end_seq=n // 3 + 50,
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
