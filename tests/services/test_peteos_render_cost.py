"""A peteos thread's render learns peteos' display order from the events it shows and the stored
context, not from the whole thread: its reads do not grow with history, and it gives what the
whole thread's view (selectors.peteos.peteos_view) gives for those events."""

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore.bench.peteos_render import peteos_context
from contextstore.models import Collapse, Thread
from contextstore.selectors import peteos, rendering
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.transfer import thread_import


def imported(workspace, actor, size: int) -> Thread:
    return thread_import(workspace=workspace, data=peteos_context(size), actor=actor,
                         session_key=f"peteos-cost-{size}")


def shown(thread: Thread, **options) -> list[int]:
    body = rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=3000, reuse=False,
                            **options).body
    return [m["seq"] for m in body["messages"] if m.get("section") == "history"]


@pytest.mark.parametrize("strip_thinking", [False, True])
def test_the_render_does_not_read_the_whole_thread_and_its_reads_do_not_grow(
        workspace, actor, monkeypatch, strip_thinking):
    small, large = imported(workspace, actor, 300), imported(workspace, actor, 3000)

    def whole_thread(thread):
        raise AssertionError("the render read the whole thread's events")

    monkeypatch.setattr(peteos, "_export", whole_thread)
    counts = []
    for thread in (small, large):
        with CaptureQueriesContext(connection) as queries:
            assert shown(thread, strip_thinking=strip_thinking)
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1]


@pytest.mark.parametrize("strip_thinking", [False, True])
@pytest.mark.parametrize("change", ["none", "note and collapse", "early anchor"])
def test_the_window_view_is_the_whole_views_for_the_events_shown(workspace, actor, monkeypatch,
                                                                 change, strip_thinking):
    thread = imported(workspace, actor, 400)
    if change != "none":  # a person's note, a collapse over messages of both anchors
        event_append(thread=thread, actor=actor, events=[
            {"type": "Message", "role": "user", "content": "a person's note"}])
        collapse_create(thread=thread, start_position=380, end_position=390, summary_text="in short",
                        actor=actor, source=Collapse.Source.PERSON)
    if change == "early anchor":  # shown before the newest: only the whole thread says so
        event_append(thread=thread, actor=actor, events=[
            {"type": "Message", "role": "user", "content": "noted early", "anchor": "notes"}])
    exports = []
    whole_export = peteos._export
    monkeypatch.setattr(peteos, "_export", lambda t: exports.append(t) or whole_export(t))
    body = rendering.render(thread=Thread.objects.get(pk=thread.pk), max_tokens=3000, reuse=False,
                            strip_thinking=strip_thinking).body
    seqs = [m["seq"] for m in body["messages"] if m.get("section") == "history"]
    assert len(exports) == (change == "early anchor")
    whole = peteos.peteos_view(Thread.objects.get(pk=thread.pk))
    assert whole is not None and len(seqs) > 20
    # the order the whole view gives these events, and none its forks leave out
    assert seqs == sorted(seqs, key=lambda s: whole[0][s])
    if strip_thinking:
        assert not set(seqs) & whole[1]
    if change != "none":
        assert "in short" in [m["content"] for m in body["messages"]]


def test_the_bench_command_prints_each_size_and_the_ratio(db):
    out = StringIO()
    call_command("bench_peteos_render", sizes="40,80", samples=1, max_tokens=2000, stdout=out)
    text = out.getvalue()
    for size in (40, 80):
        assert f"{size} events imported" in text
    assert re.search(r"openai: 80 / 40 events = [\d.]+x", text)
    assert re.search(r"raw strip_thinking: [\d.]+ ms median of 1, \d+ messages", text)
