"""Measure the hot paths against history length: append, render (with and without a render
record), text search; and the size of a render record.

Run against PostgreSQL for production figures:
    DATABASE_URL=postgres://... python manage.py bench_core
Data lives in a workspace `bench` and is reused between runs (--fresh rebuilds it).
"""

import json
import statistics
import time
from collections.abc import Callable

from django.core.management.base import BaseCommand
from django.db import connection

from contextstore import rendering
from contextstore.models import Session, Thread
from contextstore.services import renders
from contextstore.services.common import Actor
from contextstore.services.events import event_append, event_search
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.workspaces import workspace_ensure

RARE = "quokka"
BODY = ("The export job reads from the replica which lagged by forty minutes, so the retry "
        "policy gave up after three attempts without backoff; we move it to the primary and "
        "add exponential backoff with jitter, then verify on staging before the nightly run. ")


def event(i: int) -> dict:
    # about 400 characters, like the events the design figures were measured with
    text = f"turn {i}: " + BODY * 2
    return {"type": "Message", "role": "user" if i % 2 else "assistant", "content": text[:400]}


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of fn in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


class Command(BaseCommand):
    help = "Benchmark append, render and search against history length; prints ratios."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="1000,10000,100000")
        parser.add_argument("--fresh", action="store_true")
        parser.add_argument("--repeat", type=int, default=30)

    def handle(self, *args, sizes: str, fresh: bool, repeat: int, **options):
        actor = Actor.system("bench_core")
        workspace, _ = workspace_ensure(slug="bench")
        sizes_n = [int(s) for s in sizes.split(",")]
        if fresh:
            for session in Session.objects.filter(workspace=workspace):
                session_delete(session=session, actor=actor)
        threads = {n: self._thread(workspace, n, actor) for n in [0, *sizes_n]}
        if connection.vendor == "postgresql":
            # What autovacuum does after a bulk load; without it the planner guesses blind.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE contextstore_event")
        self.stdout.write(f"database: {connection.vendor}; events of ~400 characters")

        self.stdout.write("\nappend, batch of 100 (ms per event, median)")
        append = {}
        for n in [0, *sizes_n[1:]]:
            thread = threads[n]
            batch = [event(i) for i in range(100)]
            append[n] = timed(lambda t=thread, b=batch: event_append(thread=t, events=b, actor=actor),
                              max(repeat // 3, 5)) / 100
            self.stdout.write(f"  thread of {n:>7} events: {append[n]:.3f} ms/event "
                              f"({1000 / append[n]:,.0f} events/s)")

        self.stdout.write("\nrender, 8k-token budget (ms, median)")
        render = {}
        for n in sizes_n:
            thread = Thread.objects.get(pk=threads[n].pk)
            render[n] = timed(lambda t=thread: rendering.context_render(thread=t, max_tokens=8000), repeat)
            self.stdout.write(f"  thread of {n:>7} events: {render[n]:.2f} ms")

        self.stdout.write("\nrender with record=true, 8k-token budget (ms, median)")
        recorded = {}
        for n in sizes_n:
            thread = Thread.objects.get(pk=threads[n].pk)
            recorded[n] = timed(lambda t=thread: self._record(t, 8000, actor), repeat)
            self.stdout.write(f"  thread of {n:>7} events: {recorded[n]:.2f} ms "
                              f"({recorded[n] / render[n]:.2f}x a render without record, target <= 1.3)")
        first = sizes_n[0]
        thread = Thread.objects.get(pk=threads[first].pk)
        record = self._record(thread, 10_000_000, actor)
        included = len(renders.unpack_events(record.spec["events"]))
        size = len(json.dumps(record.spec, separators=(",", ":"))) + len(record.prefix_hash) + 16 + 40
        target = 1024 + 16 * included
        self.stdout.write(f"\nrender record of a {first}-event render: {included} events included, "
                          f"{size} bytes (spec + hash + id + numbers; target < {target})")

        self.stdout.write(f"\nfind the rare word {RARE!r} (ms, median)")
        search = {}
        for n in sizes_n:
            thread = threads[n]
            hits = event_search(thread=thread, text=RARE)
            assert len(hits) == 1, f"expected one hit, got {len(hits)}"
            search[n] = timed(lambda t=thread: event_search(thread=t, text=RARE), repeat)
            self.stdout.write(f"  thread of {n:>7} events: {search[n]:.2f} ms")

        small, large = sizes_n[0], sizes_n[-1]
        self.stdout.write(f"\nratios, {large} vs {small} events (target < 1.5)")
        for label, figures, base in (("append", append, 0), ("render", render, small),
                                     ("record", recorded, small), ("search", search, small)):
            ratio = figures[large] / figures[base]
            self.stdout.write(f"  {label:<7} {ratio:.2f}x" + ("" if ratio < 1.5 else "  ABOVE TARGET"))

    def _record(self, thread: Thread, budget: int, actor: Actor):
        rendered = rendering.render(thread=thread, max_tokens=budget)
        return renders.render_record(thread=thread, rendered=rendered, actor=actor)

    def _thread(self, workspace, n: int, actor: Actor) -> Thread:
        session, _ = session_ensure(workspace=workspace, key=f"bench-{n}", actor=actor)
        thread, _ = thread_ensure(session=session, actor=actor)
        missing = n - thread.event_count
        if n == 0 and thread.event_count:
            session_delete(session=session, actor=actor)
            return self._thread(workspace, n, actor)
        i = thread.event_count
        while missing > 0:
            size = min(missing, 1000)
            batch = [event(i + k) for k in range(size)]
            if i <= 10 < i + size:
                batch[10 - i]["content"] = f"the {RARE} ate the replica's backoff " + BODY[:300]
            event_append(thread=thread, events=batch, actor=actor)
            i += size
            missing -= size
        if n:
            self.stdout.write(f"thread of {n} events ready", ending="\r")
        return Thread.objects.get(pk=thread.pk)
