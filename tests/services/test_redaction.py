"""Secrets are redacted before they are stored (contextstore/redaction.py): the corpus of
secrets and near-misses, the walk over JSON values, a workspace's setting (its extra patterns,
checked on save; its off switch; the server's), the time bound on a user's pattern, and the
services that take agent text without the API. The API and OTLP paths are in
tests/api/test_redaction.py and tests/otlp/test_redaction.py."""

import json
import time

import pytest

from contextstore.models import AuditLog, Event, Workspace
from contextstore.redaction import (
    RedactionTimeout,
    pattern_problem,
    redact,
    redact_events,
    rules_of,
    setting_problems,
)
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.memories import memory_remember, provider_state_put
from contextstore.services.sessions import session_ensure, session_update
from contextstore.services.state import state_write
from contextstore.services.workspaces import workspace_redaction_set
from tests.redaction_corpus import NEAR_MISSES, corpus, rows_holding

RULES = rules_of({}, default_on=True, timeout_ms=2000)
OPENAI = "sk-" + "A1b2C3d4E5f6G7h8I9j0" * 2
AWS = "AKIA" + "Z7Q4RM2K9XW3PL5N"


@pytest.mark.parametrize(("kind", "text", "secret"), corpus(),
                         ids=[f"{i}-{c[0]}" for i, c in enumerate(corpus())])
def test_every_secret_of_the_corpus_becomes_its_typed_marker(kind, text, secret):
    shown = secret if secret in text else json.dumps(secret)[1:-1]  # escaped in a JSON string
    out, counts = redact(RULES, text)
    assert shown not in out
    assert f"[REDACTED:{kind}]" in out and counts == {kind: 1}
    # what stood around it stays
    before, _, after = text.partition(shown)
    assert out == before + f"[REDACTED:{kind}]" + after


def test_the_corpus_holds_about_fifty_secrets_and_fifty_near_misses():
    assert len(corpus()) >= 50 and len(NEAR_MISSES) >= 50


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_a_near_miss_stays_as_it_was(text):
    assert redact(RULES, text) == (text, {})


def test_a_secret_inside_a_json_string_leaves_valid_json():
    text = json.dumps({"messages": [{"role": "user", "content": f"use {OPENAI}"}], "n": 1})
    out, counts = redact(RULES, text)
    assert json.loads(out) == {"messages": [{"role": "user", "content": "use [REDACTED:openai_key]"}],
                               "n": 1}
    assert counts == {"openai_key": 1}


def test_the_walk_redacts_every_string_value_but_keeps_keys_and_ids():
    value = {"content": OPENAI, "parts": [{"type": "tool_use", "id": "toolu_" + OPENAI,
                                           "input": {"command": f"aws configure set {AWS}",
                                                     OPENAI: 1}}],
             "n": 3, "ok": True, "none": None}
    out, counts = redact(RULES, value)
    assert out == {"content": "[REDACTED:openai_key]", "parts": [{
        "type": "tool_use", "id": "toolu_" + OPENAI,  # an id the provider reads back stays
        "input": {"command": "aws configure set [REDACTED:aws_access_key_id]", OPENAI: 1}}],
        "n": 3, "ok": True, "none": None}
    assert counts == {"openai_key": 1, "aws_access_key_id": 1}


def test_a_value_without_secrets_is_returned_as_the_same_object():
    value = {"a": ["x", {"b": "y"}], "c": "no secrets here"}
    out, counts = redact(RULES, value)
    assert out is value and counts == {}


def test_events_count_what_was_redacted_in_their_data():
    events = [{"type": "Message", "content": f"{OPENAI} and {OPENAI}", "data": {"k": AWS}},
              {"type": "Message", "content": "clean"},
              {"type": "ToolCall", "parts": [{"arguments": json.dumps({"key": OPENAI})}]},
              {"type": "Message", "content": OPENAI, "data": ["a", "list"]}]
    out = redact_events(RULES, events)
    assert out[0]["content"] == "[REDACTED:openai_key] and [REDACTED:openai_key]"
    assert out[0]["data"] == {"k": "[REDACTED:aws_access_key_id]",
                              "redacted": {"openai_key": 2, "aws_access_key_id": 1}}
    assert out[1] is events[1]
    assert out[2]["data"] == {"redacted": {"openai_key": 1}}
    assert out[3]["data"] == ["a", "list"]  # data that is not an object is left as it was
    assert events[0]["content"] == f"{OPENAI} and {OPENAI}"  # the input is not changed


@pytest.mark.parametrize("pattern", [r"TKT-[0-9]{12}", r"(?i)internal-[a-f0-9]{32}",
                                     r"acme_(?:live|test)_[A-Za-z0-9]{20}", r"(?:ab){2}x",
                                     r"password=\S+"])
def test_a_plain_pattern_is_accepted(pattern):
    assert pattern_problem(pattern) is None


@pytest.mark.parametrize(("pattern", "problem"), [
    (r"(a+)+b", "repeated group"), (r"(\w+\s?)*$", "repeated group"), (r"(a|ab)*c", "repeated group"),
    (r"(?:x*){2,}y", "repeated group"), (r"(a)\1", "backreferences"), (r"(?P<a>x)(?P=a)", "backreferences"),
    (r"a*", "matches empty"), (r"(x", "not a valid"), ("", "non-empty"), ("x" * 501, "at most"),
])
def test_a_pattern_that_can_run_away_or_is_wrong_is_refused(pattern, problem):
    assert problem in (pattern_problem(pattern) or "")


def test_a_setting_is_checked_field_by_field():
    assert setting_problems({"enabled": True, "extra_patterns": []}) == {}
    assert setting_problems({"enabled": "yes", "extra_patterns": [
        {"name": "Bad Name", "pattern": "x"}, {"name": "ok", "pattern": "(a+)+"}, "nope"], "more": 1}) == {
        "redaction.more": "unknown field", "redaction.enabled": "true or false",
        "redaction.extra_patterns[0].name": "lower-case letters, digits and _, at most 40, a letter first",
        "redaction.extra_patterns[1].pattern": pattern_problem("(a+)+"),
        "redaction.extra_patterns[2]": 'an object {"name": ..., "pattern": ...}'}
    assert setting_problems([]) == {"redaction": "must be an object with enabled and extra_patterns"}


def test_extra_patterns_add_their_own_markers():
    rules = rules_of({"extra_patterns": [{"name": "ticket_token", "pattern": r"TKT-[0-9]{12}"}]},
                     default_on=True, timeout_ms=2000)
    assert redact(rules, f"ticket TKT-123456789012 and {OPENAI}") == (
        "ticket [REDACTED:ticket_token] and [REDACTED:openai_key]",
        {"ticket_token": 1, "openai_key": 1})


def test_the_off_switches_store_text_as_it_came():
    assert rules_of({"enabled": False}, default_on=True, timeout_ms=2000) is None
    assert rules_of({}, default_on=False, timeout_ms=2000) is None
    assert redact(None, OPENAI) == (OPENAI, {})


def test_a_pathological_user_pattern_is_cut_off_at_the_deadline():
    """\\w*\\w*\\w*\\w*\\w*\\d passes the save-time check (no nested repetition) but backtracks
    polynomially on a long word without a digit: the regex deadline stops it, and the write is
    refused rather than stored unchecked."""
    pattern = r"x\w*\w*\w*\w*\w*\d"
    assert pattern_problem(pattern) is None
    rules = rules_of({"extra_patterns": [{"name": "slow", "pattern": pattern}]},
                     default_on=True, timeout_ms=200)
    start = time.monotonic()
    with pytest.raises(RedactionTimeout) as refused:
        redact(rules, "x" + "a" * 5000)
    assert time.monotonic() - start < 2
    assert refused.value.status == 422 and refused.value.details == {"redaction": "slow"}


# --- the services ----------------------------------------------------------------------------

def test_the_workspace_setting_is_saved_and_audited(workspace, actor):
    # (a bad one is refused by its door, the admin's form: test_admin_refuses_a_bad_pattern...)
    good = {"enabled": True, "extra_patterns": [{"name": "ticket_token", "pattern": r"TKT-[0-9]{12}"}]}
    workspace_redaction_set(workspace=workspace, actor=actor, redaction=good)
    assert Workspace.objects.get(pk=workspace.pk).redaction == good
    assert AuditLog.objects.get(action="workspace.redaction").details == {
        "enabled": True, "patterns": ["ticket_token"]}


def test_admin_refuses_a_bad_pattern_and_saves_a_good_one(admin_client, workspace):
    url = f"/admin/contextstore/workspace/{workspace.pk}/change/"
    form = {"name": "Acme", "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}
    bad = admin_client.post(url, {**form, "redaction": json.dumps(
        {"enabled": True, "extra_patterns": [{"name": "slow", "pattern": "(a|ab)*c"}]})})
    assert bad.status_code == 200 and "repeated group" in bad.content.decode()
    assert Workspace.objects.get(pk=workspace.pk).redaction["extra_patterns"] == []
    good = {"enabled": False, "extra_patterns": [{"name": "ticket_token", "pattern": "TKT-[0-9]{12}"}]}
    assert admin_client.post(url, {**form, "redaction": json.dumps(good)}).status_code == 302
    assert Workspace.objects.get(pk=workspace.pk).redaction == good
    page = admin_client.get(url).content.decode()
    assert "ticket_token" in page and "docs/security.md" in page


def test_no_service_that_takes_agent_text_stores_a_secret(workspace, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"my key is {OPENAI}"},
        {"type": "LLMCallStart", "data": {"messages": [{"role": "user", "content": OPENAI}]}}])
    state_write(thread=thread, actor=actor, state={"creds": {"aws": AWS}}, memory=[{"k": OPENAI}],
                summary=f"the user shared {OPENAI}")
    state_write(thread=thread, actor=actor, state={"more": OPENAI}, merge=True)
    block_upsert(thread=thread, name="notes", value=f"key: {OPENAI}", actor=actor)
    memory_remember(workspace=workspace, user_id="ann", content=f"ann's key {OPENAI}",
                    data={"aws": AWS}, actor=actor)
    provider_state_put(thread=thread, provider="mem0", state={"secret": OPENAI}, actor=actor)
    assert rows_holding(OPENAI) == [] and rows_holding(AWS) == []
    first = Event.objects.get(seq=1)
    assert first.content == "my key is [REDACTED:openai_key]"
    assert first.data == {"redacted": {"openai_key": 1}}


def test_with_the_workspace_switch_off_text_is_stored_as_it_came(workspace, thread, actor):
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={"enabled": False})
    thread.refresh_from_db()
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": OPENAI}])
    assert Event.objects.get().content == OPENAI


def test_with_the_server_switch_off_text_is_stored_as_it_came(thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REDACT_SECRETS": False}
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": OPENAI}])
    assert Event.objects.get().content == OPENAI


def test_a_timed_out_pattern_stores_nothing(workspace, thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REGEX_TIMEOUT_MS": 100}
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={
        "extra_patterns": [{"name": "slow", "pattern": r"x\w*\w*\w*\w*\w*\d"}]})
    thread.refresh_from_db()
    with pytest.raises(RedactionTimeout):
        event_append(thread=thread, actor=actor,
                     events=[{"type": "Message", "content": "x" + "a" * 5000}])
    assert not Event.objects.exists()


def test_a_collapse_summary_written_by_an_agent_is_redacted(thread, actor):
    event_append(thread=thread, actor=actor, events=[{"type": "Message", "content": "a"}] * 2)
    collapse_create(thread=thread, start_position=1, end_position=2, actor=actor,
                    summary_text=f"the user gave {OPENAI}")
    summary = Event.objects.get(type="Summary")
    assert summary.content == "the user gave [REDACTED:openai_key]"
    assert summary.data["redacted"] == {"openai_key": 1} and rows_holding(OPENAI) == []


def test_a_sessions_title_and_metadata_are_redacted_when_made_and_when_changed(workspace, actor):
    session, _ = session_ensure(workspace=workspace, key="k", title=f"debug {OPENAI}",
                                metadata={"env": {"OPENAI_API_KEY": OPENAI}}, actor=actor)
    assert session.title == "debug [REDACTED:openai_key]"
    assert session.metadata == {"env": {"OPENAI_API_KEY": "[REDACTED:openai_key]"}}
    session_ensure(workspace=workspace, key="k", title=f"again {AWS}", actor=actor)
    session_update(session=session, metadata={"aws": AWS}, actor=actor)
    session.refresh_from_db()
    assert session.title == "again [REDACTED:aws_access_key_id]" and session.metadata == {
        "aws": "[REDACTED:aws_access_key_id]"}
    assert rows_holding(OPENAI) == [] and rows_holding(AWS) == []
