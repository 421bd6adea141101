"""Every API path that takes agent text stores its secrets redacted: checked by reading every
row of every table (tests/redaction_corpus.rows_holding), so no copy is left anywhere (events,
stored call messages, revisions, block versions, staged sync parts, scoped states, audit)."""

import json

from contextstore.models import Event, ScopedState, Session
from contextstore.services.workspaces import workspace_redaction_set
from tests.conftest import response_json
from tests.provider_types import assert_anthropic_request, assert_openai_request
from tests.redaction_corpus import corpus, rows_holding

OPENAI = "sk-proj-" + "Zx9_Qw8-Er7Ty6Ui5" * 3
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN" * 3
PEM = ("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oWmTO5\n"
       "oAoGCCqGSM49AwEHoUQDQgAE7gPP1yrDeCH3JXoX6qJKZaRx\n-----END EC PRIVATE KEY-----")
URL_PASSWORD = "Pw-" + "q8Zr5Lm3X" * 2
SECRETS = (OPENAI, GITHUB, PEM, URL_PASSWORD)
AGENTS = "/api/v1/agent-sessions/"
WHO = {"app": "shop", "user_id": "ann", "key": "s1"}


def nowhere() -> None:
    for secret in SECRETS:
        assert rows_holding(secret) == [], secret


def test_appended_events_keep_markers_and_count_them(api_client, thread_url):
    answer = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "role": "user", "content": f"deploy with {OPENAI}\n```\n{PEM}\n```"},
        {"type": "ToolCall", "data": {"id": "c1", "name": "shell", "arguments": {
            "cmd": f"git clone https://bot:{URL_PASSWORD}@git.example.com/x.git",
            "env": {"GH_TOKEN": GITHUB}}}},
        {"type": "LLMCallStart", "data": {"messages": [{"role": "user", "content": OPENAI}]}},
    ]}, format="json")
    assert answer.status_code == 201
    nowhere()
    events = api_client.get(f"{thread_url}events/").json()["results"]
    assert events[0]["content"] == ("deploy with [REDACTED:openai_key]\n```\n[REDACTED:private_key]"
                                    "\n```")
    assert events[0]["data"] == {"redacted": {"openai_key": 1, "private_key": 1}}
    assert events[1]["data"] == {
        "id": "c1", "name": "shell", "arguments": {
            "cmd": "git clone https://bot:[REDACTED:url_password]@git.example.com/x.git",
            "env": {"GH_TOKEN": "[REDACTED:github_token]"}},
        "redacted": {"url_password": 1, "github_token": 1}}


def test_the_counter_never_reaches_what_a_provider_is_sent(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": f"my key {OPENAI}"},
        {"type": "ToolCall", "data": {"id": "c1", "name": "login", "arguments": {"token": GITHUB}}},
        {"type": "ToolResult", "content": "ok", "data": {"tool_call_id": "c1"}},
    ]}, format="json")
    openai = api_client.get(f"{thread_url}context/?format=openai").json()["messages"]
    assert openai == [
        {"role": "user", "content": "my key [REDACTED:openai_key]"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "login", "arguments": '{"token":"[REDACTED:github_token]"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    assert_openai_request(openai)
    anthropic = api_client.get(f"{thread_url}context/?format=anthropic").json()
    assert "redacted" not in json.dumps(anthropic["messages"]).replace("[REDACTED:", "")
    assert_anthropic_request(anthropic["system"], anthropic["messages"])


def test_state_blocks_memories_and_provider_states_are_redacted(api_client, thread_url):
    assert api_client.put(f"{thread_url}state/", {"state": {"db": f"postgres://u:{URL_PASSWORD}@h/d"},
                                                  "memory": [{"note": OPENAI}]},
                          format="json").status_code == 200
    assert api_client.patch(f"{thread_url}state/", {"state": {"gh": GITHUB}},
                            format="json").status_code == 200
    assert api_client.put(f"{thread_url}blocks/keys/", {"value": PEM}, format="json").status_code == 201
    assert api_client.post("/api/v1/memories/", {"user_id": "ann", "content": f"key {OPENAI}",
                                                 "data": {"gh": GITHUB}}, format="json").status_code == 201
    assert api_client.put(f"{thread_url}providers/mem0/", {"state": {"k": OPENAI}},
                          format="json").status_code == 200
    nowhere()
    state = api_client.get(f"{thread_url}state/").json()
    assert state["state"] == {"db": "postgres://u:[REDACTED:url_password]@h/d",
                              "gh": "[REDACTED:github_token]"}


def test_a_sync_save_in_parts_stages_and_applies_only_redacted_items(api_client, thread_url):
    def items(start: int, secret: str) -> list[dict]:
        return [{"key": f"m{start}", "event": {"type": "Message", "content": f"use {secret}"}}]
    staged = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "upload_id": "u1", "part": 0,
                                                    "parts": 2, "items": items(0, OPENAI)}, format="json")
    assert staged.json()["status"] == "staged"
    nowhere()  # the staged part is stored too
    applied = api_client.post(f"{thread_url}sync/", {
        "namespace": "fw", "upload_id": "u1", "part": 1, "parts": 2, "items": items(1, GITHUB),
        "state": {"pem": PEM}}, format="json")
    assert applied.json()["created"] == 2
    nowhere()
    # saving the same items again is a no-op: the digest is of the redacted item
    again = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": items(0, OPENAI)},
                            format="json")
    assert again.json()["unchanged"] == 1 and Event.objects.count() == 2


def test_an_import_stores_its_events_document_and_blocks_redacted(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Message", "content": "x"}]},
                    format="json")
    api_client.put(f"{thread_url}state/", {"state": {"a": 1}}, format="json")
    api_client.put(f"{thread_url}blocks/db/", {"value": "y"}, format="json")
    exported = response_json(api_client.get(f"{thread_url}export/"))
    # an export from elsewhere, holding secrets
    exported["events"][0].update(content=OPENAI, data={"gh": GITHUB})
    exported["thread"]["state"] = {"pem": PEM}
    exported["blocks"][0]["value"] = f"https://a:{URL_PASSWORD}@h"
    copy = api_client.post("/api/v1/threads/import/?session_key=copy", exported, format="json")
    assert copy.status_code == 201, copy.json()
    nowhere()
    url = f"/api/v1/threads/{copy.json()['id']}/"
    [event] = api_client.get(f"{url}events/").json()["results"]
    assert (event["content"], event["data"]) == ("[REDACTED:openai_key]", {
        "gh": "[REDACTED:github_token]", "redacted": {"openai_key": 1, "github_token": 1}})
    assert api_client.get(f"{url}state/").json()["state"] == {"pem": "[REDACTED:private_key]"}


def test_an_agent_session_commit_redacts_events_state_and_scopes(api_client):
    created = api_client.post(AGENTS, {**WHO, "state": {"k": OPENAI}, "app_state": {"gh": GITHUB},
                                       "title": f"ann's {GITHUB}", "metadata": {"key": OPENAI}},
                              format="json")
    assert created.status_code == 201, created.json()
    session = Session.objects.get(app="shop")
    assert (session.title, session.metadata) == ("ann's [REDACTED:github_token]",
                                                 {"key": "[REDACTED:openai_key]"})
    committed = api_client.post(AGENTS + "commit/", {**WHO, "events": [
        {"type": "Message", "content": f"here: {PEM}", "client_id": "e1"}],
        "state": {"db": f"mysql://root:{URL_PASSWORD}@db/x"}, "user_state": {"k": OPENAI},
        "batch_id": "b1"}, format="json")
    assert committed.status_code == 200, committed.json()
    nowhere()
    assert ScopedState.objects.get(scope="user").state == {"k": "[REDACTED:openai_key]"}
    # a replay of the same batch finds its answer: the request's hash is of what was stored
    replay = api_client.post(AGENTS + "commit/", {**WHO, "events": [
        {"type": "Message", "content": f"here: {PEM}", "client_id": "e1"}],
        "state": {"db": f"mysql://root:{URL_PASSWORD}@db/x"}, "user_state": {"k": OPENAI},
        "batch_id": "b1"}, format="json")
    assert replay.status_code == 200 and replay.json() == committed.json()


def test_the_whole_corpus_appended_leaves_no_secret_in_any_row(api_client, thread_url):
    cases = corpus()
    events = [{"type": "Message", "content": text} for _, text, _ in cases]
    assert api_client.post(f"{thread_url}events/", {"events": events}, format="json").status_code == 201
    for kind, _, secret in cases:
        assert rows_holding(secret) == [], kind
    stored = Event.objects.order_by("seq")
    assert [e.data["redacted"] for e in stored] == [{kind: 1} for kind, _, _ in cases]


def test_extra_patterns_apply_to_the_next_append(api_client, thread_url, workspace, actor):
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={
        "extra_patterns": [{"name": "ticket_token", "pattern": "TKT-[0-9]{12}"}]})
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "ticket TKT-123456789012"}]}, format="json")
    assert Event.objects.get().content == "ticket [REDACTED:ticket_token]"


def test_the_workspace_off_switch_keeps_text_as_sent(api_client, thread_url, workspace, actor):
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={"enabled": False})
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Message", "content": OPENAI}]},
                    format="json")
    assert Event.objects.get().content == OPENAI


def test_a_pattern_that_runs_too_long_answers_422_and_stores_nothing(api_client, thread_url, workspace,
                                                                       actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REGEX_TIMEOUT_MS": 100}
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={
        "extra_patterns": [{"name": "slow", "pattern": r"x\w*\w*\w*\w*\w*\d"}]})
    answer = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "x" + "a" * 5000}]}, format="json")
    assert answer.status_code == 422
    assert answer.json()["error"]["code"] == "redaction_timeout"
    assert not Event.objects.exists()


SCORED_CALL = [{"type": "Message", "role": "user", "content": "hi"},
               {"type": "LLMCallStart", "data": {"model": "m"}},
               {"type": "LLMComplete", "data": {"model": "m"}}]


def test_scores_values_and_comments_are_kept_redacted(api_client, session, thread_url):
    api_client.post(f"{thread_url}events/", {"events": SCORED_CALL}, format="json")
    url = f"/api/v1/sessions/{session.pk}/scores/"
    numeric = api_client.post(url, {"name": f"acc {GITHUB[:40]}", "data_type": "numeric",
                                    "value": 0.5, "comment": f"graded with {OPENAI}"}, format="json")
    category = api_client.post(url, {"name": "tone", "data_type": "categorical",
                                     "value": GITHUB[:60]}, format="json")
    assert numeric.status_code == 201 and category.status_code == 201, (numeric.content, category.content)
    assert rows_holding(OPENAI) == [] and rows_holding(GITHUB[:40]) == []
    assert numeric.json()["comment"] == "graded with [REDACTED:openai_key]"


def test_a_failed_runs_error_and_a_forks_name_are_kept_redacted(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "turn", "run_id": "r1"}]}, format="json")
    run = api_client.get(f"{thread_url}runs/").json()["results"][0]
    failed = api_client.post(f"/api/v1/runs/{run['id']}/fail/",
                             {"error": f"401 for key {OPENAI}\n{PEM}"}, format="json")
    assert failed.status_code == 200, failed.content
    fork = api_client.post(f"{thread_url}fork/", {"name": f"try {GITHUB}"}, format="json")
    assert fork.status_code == 201, fork.content
    nowhere()
    assert api_client.get(f"/api/v1/runs/{run['id']}/").json()["error"] == (
        "401 for key [REDACTED:openai_key]\n[REDACTED:private_key]")
    assert fork.json()["name"] == "try [REDACTED:github_token]"
