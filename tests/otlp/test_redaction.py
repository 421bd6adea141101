"""OTLP exports keep their spans and log records redacted (services/otlp/ingest.py): no row
holds a secret a span or log record carried, and the events derived from them hold the markers."""

import json

from contextstore.models import Event, OtelLog, OtelSpan
from contextstore.services.workspaces import workspace_redaction_set
from tests.redaction_corpus import rows_holding

from .conftest import TRACE, attr, export, span

OPENAI = "sk-" + "A1b2C3d4E5f6G7h8I9j0" * 2
AWS = "AKIA" + "Z7Q4RM2K9XW3PL5N"
JWT = ("eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiJhbm4iLCJyb2xlIjoiYWRtaW4ifQ" + "."
       + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def test_span_attributes_events_status_and_resource_are_kept_redacted(otlp):
    chat = span("00f067aa0ba902b7", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": messages("user", f"my key is {OPENAI}"),
        "gen_ai.output.messages": messages("assistant", "stored"),
        "http.request.header.authorization": f"Bearer {JWT}"},
        events=[{"timeUnixNano": "1760000001000000000", "name": "note",
                 "attributes": [attr("aws", AWS)]}],
        status={"code": 2, "message": f"denied for {AWS}"})
    body = export(chat)
    body["resourceSpans"][0]["resource"]["attributes"].append(attr("env.OPENAI_API_KEY", OPENAI))
    assert otlp(body).status_code == 200
    for secret in (OPENAI, AWS, JWT):
        assert rows_holding(secret) == [], secret
    kept = OtelSpan.objects.get()
    assert kept.trace_id == TRACE and kept.span_id == "00f067aa0ba902b7"  # ids as sent
    assert kept.status_message == "denied for [REDACTED:aws_access_key_id]"
    user = Event.objects.get(type="Message", role="user")
    assert user.content == "my key is [REDACTED:openai_key]"


def test_log_records_are_kept_redacted_and_a_replay_is_still_recognised(otlp):
    details = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "timeUnixNano": "1760000001000000000", "traceId": TRACE, "spanId": "00f067aa0ba902b7",
        "eventName": "gen_ai.client.inference.operation.details",
        "body": {"stringValue": f"token {JWT}"},
        "attributes": [attr("gen_ai.input.messages", messages("user", OPENAI))]}]}]}]}
    assert otlp(details, signal="logs").status_code == 200
    assert otlp(details, signal="logs").status_code == 200  # the same record: kept once
    assert OtelLog.objects.count() == 1
    for secret in (OPENAI, JWT):
        assert rows_holding(secret) == [], secret


def test_a_workspace_pattern_that_runs_too_long_refuses_the_export_and_keeps_nothing(
        otlp, workspace, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "REGEX_TIMEOUT_MS": 100}
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={
        "extra_patterns": [{"name": "slow", "pattern": r"x\w*\w*\w*\w*\w*\d"}]})
    body = export(span("00f067aa0ba902b7", "chat", {
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": messages("user", "x" + "a" * 5000)}))
    answer = otlp(body)
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "redaction_timeout"
    assert not OtelSpan.objects.exists()


def test_an_instrumentation_scope_and_a_log_event_name_are_kept_redacted(otlp):
    chat = span("00f067aa0ba902b7", "chat gpt-4o", {"gen_ai.operation.name": "chat"})
    body = export(chat, scope=f"agent-{OPENAI}")
    body["resourceSpans"][0]["scopeSpans"][0]["scope"].update(
        version=f"1.0+{AWS}", attributes=[attr("scope.token", JWT)])
    assert otlp(body).status_code == 200
    log = {"resourceLogs": [{"scopeLogs": [{
        "scope": {"name": f"logger {OPENAI}", "version": AWS, "attributes": [attr("t", JWT)]},
        "logRecords": [{"timeUnixNano": "1760000001000000000", "traceId": TRACE,
                        "spanId": "00f067aa0ba902b7", "eventName": f"event {AWS}",
                        "body": {"stringValue": "plain"}}]}]}]}
    assert otlp(log, signal="logs").status_code == 200
    for secret in (OPENAI, AWS, JWT):
        assert rows_holding(secret) == [], secret
    scope = json.dumps(OtelSpan.objects.get().scope)
    assert all(f"[REDACTED:{kind}]" in scope for kind in ("openai_key", "aws_access_key_id", "jwt"))
    assert OtelLog.objects.get().event_name == "event [REDACTED:aws_access_key_id]"


def test_a_workspace_with_redaction_off_keeps_its_spans_and_derived_events_as_sent(otlp, workspace,
                                                                                 actor):
    """The export's request and the derivation's task each name the workspace, so its own
    setting holds at the storage boundary (no built-in rule sneaks back in)."""
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={"enabled": False})
    chat = span("00f067aa0ba902b7", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": messages("user", f"my key is {OPENAI}")})
    assert otlp(export(chat, scope=f"agent {AWS}")).status_code == 200
    assert OtelSpan.objects.get().scope["name"] == f"agent {AWS}"
    assert Event.objects.get(type="Message", role="user").content == f"my key is {OPENAI}"


def test_a_workspace_pattern_reaches_the_derived_events(otlp, workspace, actor):
    workspace_redaction_set(workspace=workspace, actor=actor, redaction={
        "extra_patterns": [{"name": "ticket", "pattern": "TKT-[0-9]{12}"}]})
    chat = span("00f067aa0ba902b7", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.conversation.id": "conv-1",
        "gen_ai.input.messages": messages("user", "see TKT-123456789012")})
    assert otlp(export(chat, scope="TKT-123456789012")).status_code == 200
    assert rows_holding("TKT-123456789012") == []
    assert Event.objects.get(type="Message", role="user").content == "see [REDACTED:ticket]"
