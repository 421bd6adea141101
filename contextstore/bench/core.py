"""Measure the hot paths against history length: append, render (with and without a render
record), text search; the size of a render record; and the cost of one document revision
against the size of the agent's state.

Run against PostgreSQL for production figures:
    DATABASE_URL=postgres://... python manage.py bench_core
Data lives in a workspace `bench` and is reused between runs (--fresh rebuilds it).
"""

import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from django.core.management.base import OutputWrapper
from django.db import connection, transaction
from django.test import Client, override_settings

from contextstore import documents
from contextstore.models import Session, StateRevision, Thread
from contextstore.selectors import document as document_reads
from contextstore.selectors import rendering
from contextstore.selectors import renders as render_reads
from contextstore.selectors.events import event_search
from contextstore.services import document as document_service
from contextstore.services import renders
from contextstore.services.common import Actor, lock_thread
from contextstore.services.events import event_append
from contextstore.services.search import search_index_pending
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.workspaces import api_token_create, workspace_ensure

RARE = "quokka"
BODY = ("The export job reads from the replica which lagged by forty minutes, so the retry "
        "policy gave up after three attempts without backoff; we move it to the primary and "
        "add exponential backoff with jitter, then verify on staging before the nightly run. ")


def event(i: int) -> dict:
    # about 400 characters, like the events the design figures were measured with
    text = f"turn {i}: " + BODY * 2
    return {"type": "Message", "role": "user" if i % 2 else "assistant", "content": text[:400]}


@contextmanager
def _timing(spent: list[float], module: ModuleType, *names: str) -> Iterator[None]:
    """Time calls of module-level functions (looked up at call time by their callers)."""
    originals = {name: getattr(module, name) for name in names}

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.append((time.perf_counter() - started) * 1000)
        return timed_call

    for name, fn in originals.items():
        setattr(module, name, wrap(fn))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)


# fn: Callable[..., object], as mypy cannot check a lambda that binds a loop's values as
# defaults against Callable[[], object]; fn is called without arguments.
def timed(fn: Callable[..., object], repeat: int) -> float:
    """Median wall time of fn in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def timed_pair(fn: Callable[..., object], other: Callable[..., object], repeat: int) -> tuple[float, float]:
    """Median wall times of fn and other in milliseconds, run in turns: on a shared machine
    both see the same load, so their ratio holds when the absolute figures drift."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for f, spent in ((fn, samples[0]), (other, samples[1])):
            start = time.perf_counter()
            f()
            spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples[0]), statistics.median(samples[1])


class CoreBench:
    """bench_core's measurements, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, sizes: str, fresh: bool, repeat: int, revisions: int, state_sizes: str) -> None:
        actor = Actor.system("bench_core")
        workspace, _ = workspace_ensure(slug="bench")
        sizes_n = [int(s) for s in sizes.split(",")]
        if fresh:
            for session in Session.objects.filter(workspace=workspace):
                session_delete(session=session, actor=actor)
        threads = {n: self._thread(workspace, n, actor) for n in [0, *sizes_n]}
        # What the search index's worker does beside the service (beat, every few seconds).
        began = time.perf_counter()
        indexed = search_index_pending()
        if indexed["ids"]:
            spent = time.perf_counter() - began
            self.stdout.write(f"search index: {indexed['ids']:,} queued event ids indexed in "
                              f"{spent:.1f} s ({indexed['ids'] / spent:,.0f}/s)")
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

        self.stdout.write("\nrender with record=true, 8k-token budget (ms, median; run in turns "
                          "with a render without record)")
        recorded = {}
        for n in sizes_n:
            thread = Thread.objects.get(pk=threads[n].pk)
            recorded[n], plain = timed_pair(
                lambda t=thread: self._record(t, 8000, actor),
                lambda t=thread: rendering.context_render(thread=t, max_tokens=8000), repeat)
            self.stdout.write(f"  thread of {n:>7} events: {recorded[n]:.2f} ms vs {plain:.2f} ms "
                              f"({recorded[n] / plain:.2f}x a render without record, target <= 1.3)")
        first = sizes_n[0]
        thread = Thread.objects.get(pk=threads[first].pk)
        record = self._record(thread, 10_000_000, actor)
        included = len(render_reads.unpack_events(record.spec["events"]))
        size = len(json.dumps(record.spec, separators=(",", ":"))) + len(record.prefix_hash) + 16 + 40
        target = 1024 + 16 * included
        self.stdout.write(f"\nrender record of a {first}-event render: {included} events included, "
                          f"{size} bytes (spec + hash + id + numbers; target < {target})")

        # The appends above queued 1,000 events for the search index, which the worker (every
        # SEARCH_INDEX_EVERY seconds) indexes; until then a search reads each queued event of
        # its thread (about 20 µs apiece, 500 of them here). Indexed, as the worker leaves it.
        search_index_pending()
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
        if revisions:
            self._revisions(workspace, actor, [int(x) for x in state_sizes.split(",")], revisions)

    def _revisions(self, workspace, actor: Actor, state_sizes: list[int], count: int) -> None:
        """One-key merge patches on states of each size: the revision's own cost (operations
        built from the patch, previous-revision lookup, insert, snapshots when due) and,
        honestly, the whole write (lock, load, patch, save the document) and HTTP request."""
        self.stdout.write(f"\ndocument revisions: {count} one-key merge patches per state size")
        token = api_token_create(workspace=workspace, name="bench_core", actor=actor)[1]
        http = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        threads, starts = {}, {}
        for size in state_sizes:
            session, _ = session_ensure(workspace=workspace, key=f"bench-doc-{size}", actor=actor)
            session_delete(session=session, actor=actor)
            session, _ = session_ensure(workspace=workspace, key=f"bench-doc-{size}", actor=actor)
            thread, _ = thread_ensure(session=session, actor=actor)
            state = {f"key{i:06d}": "v" * 86 for i in range(max(size // 100, 1))}  # ~100 B each
            state_write(thread=thread, state=state, actor=actor)
            threads[size] = thread
            starts[size] = Thread.objects.get(pk=thread.pk).revision
        figures: dict[int, list[float]] = {size: [] for size in state_sizes}
        writes: dict[int, list[float]] = {size: [] for size in state_sizes}
        spent: list[float] = []
        # The sizes take turns, so a busy machine slows both alike.
        with _timing(spent, document_service, "_tail", "revision_create"), \
                _timing(spent, documents, "merge_patch_ops"):
            for i in range(count):
                for size in state_sizes:
                    spent.clear()
                    started = time.perf_counter()
                    state_write(thread=threads[size], state={"counter": i}, merge=True, actor=actor)
                    writes[size].append((time.perf_counter() - started) * 1000)
                    figures[size].append(sum(spent))
        for size in state_sizes:
            rows = StateRevision.objects.filter(thread=threads[size], revision__gt=starts[size])
            stored = sum(rows.values_list("size", flat=True)) / count
            patches = rows.filter(document__isnull=True)
            patch_bytes = sum(patches.values_list("size", flat=True)) / max(patches.count(), 1)
            url = f"/api/v1/threads/{threads[size].pk}/state/"
            with override_settings(ALLOWED_HOSTS=["testserver"]):
                requests = timed(lambda u=url: http.patch(
                    u, data='{"state": {"counter": -1}}', content_type="application/json"),
                    max(count // 5, 5))
            started = time.perf_counter()
            document_reads.revision_document(thread=threads[size],
                                               revision=threads[size].revision)
            rebuild = (time.perf_counter() - started) * 1000
            spent_size = figures[size]
            self.stdout.write(
                f"  state of {size:>9,} B: revision {statistics.median(spent_size):.3f} ms median, "
                f"{statistics.fmean(spent_size):.3f} ms mean (snapshots included); "
                f"whole write {statistics.median(writes[size]):.2f} ms; "
                f"HTTP PATCH {requests:.2f} ms; stored {stored:,.0f} B/revision "
                f"({patch_bytes:,.0f} B per patch-only revision); rebuilding the newest "
                f"revision {rebuild:.1f} ms")
        alone = self._revisions_alone([threads[size] for size in state_sizes], count, actor)
        for size, samples in zip(state_sizes, alone, strict=True):
            self.stdout.write(
                f"  state of {size:>9,} B: revision alone {statistics.median(samples):.3f} ms "
                f"median, {statistics.fmean(samples):.3f} ms mean (snapshots included)")
        small, large = state_sizes[0], state_sizes[-1]
        for what, by_size in (("revision alone", dict(zip(state_sizes, alone, strict=True))),
                              ("revision within the write", figures)):
            for label, fn in (("median", statistics.median), ("mean", statistics.fmean)):
                ratio = fn(by_size[large]) / fn(by_size[small])
                self.stdout.write(
                    f"  {what}: {large:,} B vs {small:,} B state ({label}, target <= 1.5): "
                    f"{ratio:.2f}x" + ("" if ratio <= 1.5 else "  ABOVE TARGET"))

    def _revisions_alone(self, threads: list[Thread], count: int, actor: Actor) -> list[list[float]]:
        """The revision's own work back to back, the documents already in memory: operations
        from a one-key patch, previous-revision lookup, insert (a snapshot when due). Within
        a write the same statements run slower on a large document only because loading and
        parsing it just before leaves the process and server caches cold (the audit insert
        slows alike). Runs in a transaction that is rolled back: nothing is kept."""
        samples: list[list[float]] = [[] for _ in threads]
        with transaction.atomic():
            locked = [lock_thread(t) for t in threads]
            texts = [documents.dumps(t.document) for t in locked]
            for i in range(count):
                for k, thread in enumerate(locked):  # taking turns, as above
                    started = time.perf_counter()
                    ops = documents.merge_patch_ops(thread.document["state"], {"counter": -i},
                                                    "/state")
                    tail = document_service._tail(thread)
                    thread.revision += 1
                    document_service.revision_create(thread=thread, ops=ops, document_text=texts[k],
                                                     tail=tail, reason="bench", actor=actor)
                    samples[k].append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
        return samples

    def _record(self, thread: Thread, budget: int, actor: Actor):
        return renders.context_render_recorded(thread=thread, max_tokens=budget, actor=actor)[1]

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
