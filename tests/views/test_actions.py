import re

import pytest

from contextstore.models import AuditLog, Collapse, ContextBlock, Event, Job, Thread
from contextstore.services import clientai
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.state import state_write
from tests.conftest import messages
from tests.views.conftest import HTMX


@pytest.fixture
def history(thread, actor):
    event_append(thread=thread, events=messages(10), actor=actor)
    return thread


def audited(action: str) -> AuditLog:
    log = AuditLog.objects.filter(action=action).latest("id")
    assert log.actor_type == "user"
    return log


def test_collapse_a_selected_range_with_a_typed_summary(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/collapse/",
                                  {"start_position": 6, "end_position": 3, "summary": "the middle"})
    assert response.status_code == 302 and response["Location"] == f"/threads/{history.pk}/"
    collapse = Collapse.objects.get()
    assert (collapse.start_position, collapse.end_position, collapse.source) == (3, 6, "person")
    assert collapse.actor == "eddie"
    assert audited("collapse.create").actor_label == "eddie"


def test_htmx_actions_answer_with_a_redirect_header(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/collapse/",
                                  {"start_position": 1, "end_position": 2, "summary": "s"}, **HTMX)
    assert response.status_code == 204 and response["HX-Redirect"] == f"/threads/{history.pk}/"


def test_undo_brings_the_originals_back(editor_client, history, actor):
    collapse = collapse_create(thread=history, start_position=2, end_position=4,
                               summary_text="s", actor=actor)
    response = editor_client.post(f"/threads/{history.pk}/collapses/{collapse.pk}/undo/")
    assert response.status_code == 302
    assert Event.objects.filter(thread=history, status="collapsed").count() == 0
    assert audited("collapse.undo")


def test_undoing_twice_is_a_readable_conflict(editor_client, history, actor):
    collapse = collapse_create(thread=history, start_position=2, end_position=4,
                               summary_text="s", actor=actor)
    editor_client.post(f"/threads/{history.pk}/collapses/{collapse.pk}/undo/")
    response = editor_client.post(f"/threads/{history.pk}/collapses/{collapse.pk}/undo/", **HTMX)
    assert response.status_code == 409
    assert "already undone" in response.content.decode()
    assert response["HX-Retarget"] == "#flash"


@pytest.mark.parametrize("data, message", [
    ({"start_position": "x", "end_position": 2, "summary": "s"}, "start position"),
    ({"start_position": 1, "end_position": 2, "summary": "  "}, "summary"),
    ({"start_position": 50, "end_position": 60, "summary": "s"}, "No active events"),
])
def test_bad_collapse_input_is_a_400_that_changes_nothing(editor_client, history, data, message):
    response = editor_client.post(f"/threads/{history.pk}/collapse/", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Collapse.objects.exists()
    assert Event.objects.filter(thread=history, status="active").count() == 10


def test_clear_context_greys_events_and_deletes_nothing(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/clear/")
    assert response["Location"] == f"/threads/{history.pk}/?cleared=on"
    assert Event.objects.filter(thread=history, status="cleared").count() == 10
    assert audited("thread.clear_context")


def test_reset_and_reset_all_follow_clientai(editor_client, history, actor):
    state_write(thread=history, state={"k": 1}, actor=actor)
    history.refresh_from_db()
    Thread.objects.filter(pk=history.pk).update(
        document={**history.document, "conversation_history": [{"input": "x"}]})
    editor_client.post(f"/threads/{history.pk}/reset/")
    history.refresh_from_db()
    assert history.state == {} and history.conversation_history == [{"input": "x"}]
    editor_client.post(f"/threads/{history.pk}/reset-all/")
    history.refresh_from_db()
    assert history.conversation_history == []
    assert audited("thread.reset") and audited("thread.reset_all")
    assert Event.objects.filter(thread=history).count() == 10


def test_fork_a_selected_range_into_a_new_thread(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/fork/",
                                  {"start_position": 3, "end_position": 5, "name": "branch"})
    child = Thread.objects.get(name="branch")
    assert response["Location"] == f"/threads/{child.pk}/"
    assert list(child.events.values_list("content", flat=True).order_by("seq"))[0].startswith("turn 2:")
    assert child.event_count == 3 and child.parent_id == history.pk


def test_forking_onto_a_taken_name_is_a_409(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/fork/",
                                  {"start_position": 3, "end_position": 5, "name": "main"})
    assert response.status_code == 409


def test_summarize_queues_a_job_and_its_status_fragment_polls_until_done(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/summarize/",
                                  {"start_position": 2, "end_position": 5}, **HTMX)
    job = Job.objects.get()
    html = response.content.decode()
    assert response.status_code == 200 and "queued" in html and f"/jobs/{job.pk}/" in html
    assert 'hx-trigger="every 1s"' in html
    Job.objects.filter(pk=job.pk).update(status="done")
    done = editor_client.get(f"/jobs/{job.pk}/", **HTMX)
    assert done["HX-Refresh"] == "true" and "every 1s" not in done.content.decode()


def prefix_tokens(html: str) -> int:
    """The prefix figure of the gauge legend."""
    return int(re.search(r'data-section="prefix"><i class="l-prefix"></i>prefix (\d+)', html).group(1))


def test_editing_a_block_returns_the_side_panel_with_the_new_gauge(editor_client, history):
    url = f"/threads/{history.pk}/blocks/"
    before = editor_client.get(f"/threads/{history.pk}/").content.decode()
    response = editor_client.post(url, {"name": "persona", "kind": "value", "value": "word " * 300,
                                        "placement": "prefix", "order": 1}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and 'id="context-panel"' in html and "<html" not in html
    assert ContextBlock.objects.get(name="persona").placement == "prefix"
    assert prefix_tokens(before) == 0 and prefix_tokens(html) > 300
    editor_client.post(url, {"name": "persona", "kind": "value", "value": "x", "placement": "prefix",
                             "order": 1, "suppressed": "on"}, **HTMX)
    assert ContextBlock.objects.get(name="persona").value is None
    editor_client.post(url, {"name": "live", "kind": "expr", "value": "{{ state.goal }}",
                             "placement": "suffix", "order": 0}, **HTMX)
    assert ContextBlock.objects.get(name="live").expr == "{{ state.goal }}"
    assert audited("block.update") and audited("block.create")


def test_a_block_expression_that_does_not_compile_is_a_400(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/blocks/", {
        "name": "bad", "kind": "expr", "value": "{% if %}", "placement": "suffix", "order": 0}, **HTMX)
    assert response.status_code == 400 and not ContextBlock.objects.exists()


def test_a_block_name_with_a_slash_is_a_400_naming_the_rule(editor_client, history):
    response = editor_client.post(f"/threads/{history.pk}/blocks/", {
        "name": "team/plan", "kind": "value", "value": "v", "placement": "suffix", "order": 0}, **HTMX)
    assert response.status_code == 400 and not ContextBlock.objects.exists()
    assert "cannot contain &quot;/&quot;" in response.content.decode()


def test_deleting_a_block(editor_client, history, actor):
    block_upsert(thread=history, name="old", value="v", actor=actor)
    editor_client.post(f"/threads/{history.pk}/blocks/delete/", {"name": "old"}, **HTMX)
    assert not ContextBlock.objects.exists()
    assert editor_client.post(f"/threads/{history.pk}/blocks/delete/", {"name": "old"}).status_code == 404


def test_diff_two_state_revisions_and_restore_one(editor_client, history, actor):
    state_write(thread=history, state={"plan": "a", "keep": 1}, actor=actor)
    state_write(thread=history, state={"plan": "b", "keep": 1}, actor=actor)
    html = editor_client.get(f"/threads/{history.pk}/state/diff/", {"a": 1, "b": 2}, **HTMX).content.decode()
    assert '<div class="d-del">-  &quot;plan&quot;: &quot;a&quot;,</div>' in html
    assert '<div class="d-add">+  &quot;plan&quot;: &quot;b&quot;,</div>' in html
    assert "<html" not in html
    editor_client.post(f"/threads/{history.pk}/state/restore/", {"revision": 1})
    history.refresh_from_db()
    assert history.state == {"plan": "a", "keep": 1} and history.revision == 3
    assert audited("state.restore")


def test_the_diff_shows_every_document_field_an_operation_changed(editor_client, history,
                                                                  actor):
    state_write(thread=history, state={"plan": "<b>x</b>"}, memory=[{"m": 1}], actor=actor)
    clientai.thread_set_input(thread=history, input_data="q", actor=actor)
    clientai.thread_increment_iteration(thread=history, actor=actor)
    clientai.thread_reset(thread=history, actor=actor)
    history.refresh_from_db()
    html = editor_client.get(f"/threads/{history.pk}/state/diff/",
                             {"a": history.revision - 1, "b": history.revision}, **HTMX).content.decode()
    changed = re.findall(r'data-field="([a-z_]+)"', html)
    assert changed == ["state", "memory", "current_input", "original_input", "iteration"]
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # agent content escaped


def test_a_diff_with_a_missing_revision_is_a_404_message(editor_client, history):
    response = editor_client.get(f"/threads/{history.pk}/state/diff/", {"a": 1, "b": 9})
    assert response.status_code == 404 and "No revision 1" in response.content.decode()


ACTIONS = [
    ("collapse/", {"start_position": 1, "end_position": 2, "summary": "s"}),
    ("summarize/", {"start_position": 1, "end_position": 2}),
    ("fork/", {"start_position": 1, "end_position": 2, "name": "f"}),
    ("clear/", {}), ("reset/", {}), ("reset-all/", {}),
    ("blocks/", {"name": "b", "kind": "value", "value": "v", "placement": "suffix", "order": 0}),
    ("blocks/delete/", {"name": "b"}),
    ("blocks/restore/", {"name": "b", "version": 1}),
    ("state/restore/", {"revision": 0}),
]


@pytest.mark.parametrize("path, data", ACTIONS)
def test_viewers_are_refused_every_change_with_a_403(viewer_client, history, path, data):
    before = AuditLog.objects.count()
    assert viewer_client.post(f"/threads/{history.pk}/{path}", data).status_code == 403
    assert AuditLog.objects.count() == before
    assert Event.objects.filter(thread=history, status="active").count() == 10


@pytest.mark.parametrize("path, data", ACTIONS)
def test_other_workspaces_get_a_404_for_every_change(outsider_client, history, path, data):
    assert outsider_client.post(f"/threads/{history.pk}/{path}", data).status_code == 404


@pytest.mark.parametrize("path", ["collapse/", "clear/", "reset/"])
def test_changes_are_post_only(editor_client, history, path):
    assert editor_client.get(f"/threads/{history.pk}/{path}").status_code == 405


def test_viewers_see_no_action_buttons(viewer_client, history, actor):
    collapse_create(thread=history, start_position=1, end_position=2, summary_text="s", actor=actor)
    block_upsert(thread=history, name="b", value="v", actor=actor)
    state_write(thread=history, state={"a": 1}, actor=actor)
    state_write(thread=history, state={"a": 2}, actor=actor)
    html = viewer_client.get(f"/threads/{history.pk}/").content.decode()
    for label in ("Clear context", "Reset all", "Undo collapse", "Collapse range", "Add block",
                  ">Restore<", "Fork into", "Summarize with worker", 'method="post" action="/threads'):
        assert label not in html, label
    assert "read-only access" in html


def test_editors_see_the_action_buttons(editor_client, history):
    html = editor_client.get(f"/threads/{history.pk}/").content.decode()
    for label in ("Clear context", "Reset all", "Collapse range", "Add block", "Summarize with worker"):
        assert label in html


def test_actions_need_the_csrf_token(editor, history):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    assert client.post(f"/threads/{history.pk}/clear/").status_code == 403
    assert not Event.objects.filter(status="cleared").exists()


def test_pages_send_a_csp_that_forbids_inline_scripts(editor_client, history):
    response = editor_client.get(f"/threads/{history.pk}/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    html = response.content.decode()
    assert "<script>" not in html and " style=" not in html and "onclick" not in html


def test_a_block_version_is_restored_from_the_panel(editor_client, history, actor):
    block_upsert(thread=history, name="goal", value="first", actor=actor)
    block_upsert(thread=history, name="goal", value="second <b>", actor=actor)
    page = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert "Restore v1" in page and "second &lt;b&gt;" in page
    response = editor_client.post(f"/threads/{history.pk}/blocks/restore/",
                                  {"name": "goal", "version": 1}, **HTMX)
    assert response.status_code == 200 and 'id="context-panel"' in response.content.decode()
    assert ContextBlock.objects.get(name="goal").value == "first"
    assert audited("block.restore")


def test_a_deleted_block_is_offered_back_and_undeleted(editor_client, history, actor):
    block_upsert(thread=history, name="gone", value="was here", actor=actor)
    editor_client.post(f"/threads/{history.pk}/blocks/delete/", {"name": "gone"}, **HTMX)
    panel = editor_client.get(f"/threads/{history.pk}/").content.decode()
    assert 'data-deleted-block="gone"' in panel and "Undo delete" in panel
    version = re.search(r'name="name" value="gone"><input type="hidden" name="version" value="(\d+)"',
                        panel).group(1)
    editor_client.post(f"/threads/{history.pk}/blocks/restore/", {"name": "gone", "version": version})
    assert ContextBlock.objects.get(name="gone").value == "was here"
    assert 'data-deleted-block="gone"' not in editor_client.get(f"/threads/{history.pk}/").content.decode()
