"""OpenTelemetry spans, logs and traces."""

from django.db import models

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
)
from contextstore.models.threads import Thread
from contextstore.models.workspaces import ApiToken, Workspace


class OtelSpan(models.Model):
    """One OpenTelemetry span as an exporter sent it (OTLP/HTTP), kept raw: the events of its
    trace are derived from these rows (services/otlp), again whenever the mapping improves
    (`manage.py otel_remap`). A re-sent span is the same row (workspace, trace id, span id)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_span_unique leads with it
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True, default="")
    name = AgentTextField()  # exporters' text, NUL included (as every text an agent sends)
    kind = models.PositiveSmallIntegerField(default=0)
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(default=0)
    status_message = AgentTextField(blank=True, default="")
    attributes = OrderedJSONField(default=dict)
    events = OrderedJSONField(default=list)
    links = OrderedJSONField(default=list)
    resource = OrderedJSONField(default=dict)
    scope = OrderedJSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id", "span_id"],
                                               name="otel_span_unique")]

    def __str__(self) -> str:
        return f"{self.name} {self.trace_id}/{self.span_id}"


class OtelLog(models.Model):
    """A log record naming a span (GenAI content sent as log events), kept raw like the span;
    the same record re-sent is the same row (its digest)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_log_unique leads with it
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    digest = models.CharField(max_length=64)
    time_ns = models.BigIntegerField(default=0)
    event_name = AgentTextField(blank=True, default="")
    body = OrderedJSONField(null=True, blank=True)
    attributes = OrderedJSONField(default=dict)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id", "span_id", "digest"],
                                               name="otel_log_unique")]

    def __str__(self) -> str:
        return f"{self.event_name} {self.trace_id}/{self.span_id}"


class OtelPending(models.Model):
    """The derivation outbox: a trace an export brought spans or log records to that are not
    derived yet. Written in the export's own transaction, one row per export and trace (never
    updated by an export, so no export waits on a derivation's locks), and deleted by the pass
    that derived them; a pass that fails leaves it, due again later."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    token = models.ForeignKey(ApiToken, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField()
    attempts = models.PositiveSmallIntegerField(default=0)

    def __str__(self) -> str:
        return self.trace_id


class OtelTrace(models.Model):
    """Where a trace's events went: the session its resolved id names (the trace id until a
    span naming a session arrives; then its events move) and the thread holding them."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # otel_trace_unique leads with it
    trace_id = models.CharField(max_length=32)
    session_key = models.CharField(max_length=255, blank=True, default="")
    thread = models.ForeignKey(Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    mapped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "trace_id"], name="otel_trace_unique")]

    def __str__(self) -> str:
        return self.trace_id
