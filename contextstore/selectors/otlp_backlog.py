"""How far behind OTLP derivation is: the outbox's pending traces and the age of the oldest
(services/otlp/pending.py), and whether that passes the configured bound, past which the OTLP
endpoint answers 503 with Retry-After until the workers catch up (back-pressure)."""

from typing import NamedTuple

from django.conf import settings
from django.utils import timezone

from contextstore.models import OtelPending


class Backlog(NamedTuple):
    traces: int  # outbox rows (one per export and trace) not derived yet
    oldest_seconds: float  # age of the oldest row not tried yet (0 when none)
    over: str  # which bound it passes ("" when none): "traces" or "age"


def otlp_backlog(*, exact: bool = True) -> Backlog:
    """The backlog and the bound it passes (OTLP_BACKLOG_MAX_TRACES, OTLP_BACKLOG_MAX_AGE; 0
    turns one off). Not `exact`: the count stops one past the bound, so the endpoint's check
    costs the same however long the backlog. The age is the oldest row's never tried: a trace
    whose derivation failed waits its backoff without holding everyone's exports back."""
    max_traces = settings.CONTEXTSTORE["OTLP_BACKLOG_MAX_TRACES"]
    max_age = settings.CONTEXTSTORE["OTLP_BACKLOG_MAX_AGE"]
    rows = OtelPending.objects.all()
    traces = rows.count() if exact or max_traces <= 0 else rows[:max_traces + 1].count()
    oldest = (rows.filter(attempts=0).order_by("pk").values_list("created_at", flat=True).first()
              if traces else None)
    age = max(0.0, (timezone.now() - oldest).total_seconds()) if oldest is not None else 0.0
    over = ("traces" if 0 < max_traces < traces else "age" if 0 < max_age < age else "")
    return Backlog(traces, age, over)
