import pytest

from contextstore.documents import DOCUMENT_FIELDS, dumps
from contextstore.models import StateRevision, Thread
from contextstore.selectors.document import revision_diff, revision_document
from contextstore.services import clientai
from contextstore.services.events import event_append
from contextstore.services.state import state_restore, state_write
from contextstore.services.threads import thread_clear_context, thread_fork
from contextstore.services.transfer import thread_export, thread_import
from tests.conftest import messages


def test_the_documents_fields_cannot_be_assigned_past_the_service(thread):
    with pytest.raises(AttributeError, match="document"):
        thread.summary = "sneaky"
    with pytest.raises(TypeError):
        Thread(state={"a": 1})


def test_a_fork_copies_the_parents_whole_document(thread, actor):
    state_write(thread=thread, state={"a": None}, memory=[{"m": 1}], summary="S", actor=actor)
    clientai.thread_set_input(thread=thread, input_data="q", actor=actor)
    clientai.thread_increment_iteration(thread=thread, actor=actor)
    thread.refresh_from_db()
    child = thread_fork(thread=thread, name="alt", system_prompt="Other.", actor=actor)
    child.refresh_from_db()
    expected = {**thread.document, "system_prompt": "Other.",
                "extra": {"forked_from": {"thread": thread.pk, "last_seq": thread.last_seq}}}
    assert dumps(child.document) == dumps(expected)
    assert child.revision == 1 and revision_document(thread=child, revision=1) == child.document


def test_clear_context_empties_the_summary_as_a_revision_that_restores(thread, actor):
    state_write(thread=thread, summary="Earlier: greetings.", actor=actor)
    event_append(thread=thread, events=messages(3), actor=actor)
    thread.refresh_from_db()
    before = thread.revision
    thread_clear_context(thread=thread, actor=actor)
    thread.refresh_from_db()
    assert thread.summary == "" and thread.active_event_count == 0
    assert revision_diff(thread=thread, revision=before + 1) == [
        {"op": "replace", "path": "/summary", "value": ""}]
    state_restore(thread=thread, revision=before, actor=actor)
    thread.refresh_from_db()
    assert thread.summary == "Earlier: greetings."


def test_an_import_writes_the_exported_document_back_exactly(thread, actor, workspace):
    state_write(thread=thread, state={"z": 1, "a": [None]}, memory=[{"k": "é"}], summary="S",
                actor=actor)
    clientai.thread_set_input(thread=thread, input_data={"q": None}, actor=actor)
    thread.refresh_from_db()
    copy = thread_import(workspace=workspace, data=thread_export(thread=thread), actor=actor,
                         session_key="copy")
    copy.refresh_from_db()
    assert list(copy.document) == list(DOCUMENT_FIELDS)
    assert dumps(copy.document) == dumps(thread.document)
    assert list(StateRevision.objects.filter(thread=copy).values_list("reason", flat=True)) == [
        "initial document", "import"]
