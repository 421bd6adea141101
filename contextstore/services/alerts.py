"""Alert rules: made, changed and deleted here; checked by beat (tasks.evaluate_alerts) and
their events delivered by a worker (tasks.deliver_alert).

A check reads the rule's window of model calls the way trends reads them
(selectors.trends.window_figures: the CallFigure rows; the errors as trends counts them per
model) or, for cache breaks, the calls' CallCacheVerdict rows. A window without data (no call
reporting cache tokens for a hit rate, no latency for p95) changes nothing: a rule neither fires
nor resolves on silence. Cost and errors over no calls are 0. A rule records an AlertEvent when
its state changes (ok → firing, firing → ok), never on every check; the row is locked while it
is checked, so two beats never record one change twice.

Beat's pass is bounded: at most BATCH rules, those checked longest ago first (the
`last_evaluated_at` watermark, as services/cache_verdicts.py walks calls), so its cost follows
the number of rules, not of calls."""

import json
import logging
import math
import secrets
import time
from datetime import datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.http import QueryDict
from django.utils import timezone

from contextstore import webhooks
from contextstore.forms import SessionFilterForm
from contextstore.models import AlertEvent, AlertRule, SavedView, Workspace
from contextstore.outbox import publish_after_commit
from contextstore.selectors.monitoring import cache_breaks_in_window
from contextstore.selectors.sessions import workspace_sessions
from contextstore.selectors.trends import window_figures
from contextstore.services.common import Actor, audit
from contextstore.viewspec import check

logger = logging.getLogger(__name__)
BATCH = 200  # rules checked by one beat pass
DELIVER_TASK = "contextstore.tasks.deliver_alert"
RULE_FIELDS = ("name", "metric", "comparison", "threshold", "window_minutes", "agent", "model",
               "saved_view", "webhook_url", "enabled")


def alert_rule_create(*, workspace: Workspace, actor: Actor, created_by: User | None = None,
                      **fields: Any) -> tuple[AlertRule, str]:
    """The rule and its webhook secret, which is returned here once and never shown again."""
    secret = secrets.token_hex(32)
    with transaction.atomic():
        rule = AlertRule.objects.create(workspace=workspace, secret=secret, created_by=created_by,
                                        state_since=timezone.now(),
                                        **{k: v for k, v in fields.items() if k in RULE_FIELDS})
        audit(actor=actor, action="alert_rule.create", target=rule, workspace=workspace, metric=rule.metric)
    return rule, secret


def alert_rule_update(*, rule: AlertRule, actor: Actor, **fields: Any) -> AlertRule:
    """Changes what is given. A changed condition starts again from ok without an event: the
    next check fires if the new condition holds."""
    changed = {k: v for k, v in fields.items() if k in RULE_FIELDS}
    with transaction.atomic():
        for name, value in changed.items():
            setattr(rule, name, value)
        if set(changed) - {"name", "webhook_url"}:
            rule.state, rule.state_since, rule.last_evaluated_at = AlertRule.State.OK, timezone.now(), None
        rule.save()
        audit(actor=actor, action="alert_rule.update", target=rule, workspace=rule.workspace,
              fields=sorted(changed))
    return rule


def alert_rule_delete(*, rule: AlertRule, actor: Actor) -> None:
    with transaction.atomic():
        audit(actor=actor, action="alert_rule.delete", target=rule, workspace=rule.workspace, name=rule.name)
        rule.delete()


# ------------------------------------------------------------------ checks


def _sessions(view: SavedView) -> Any:
    """The sessions a saved view of the session list keeps, or None when its filters no longer
    parse (the rule then has no data rather than widening to every session)."""
    query, _ = check(view.page, view.query)
    form = SessionFilterForm(QueryDict(query))
    if not form.is_valid():
        return None
    return workspace_sessions(workspace=view.workspace, q=form.cleaned_data.get("q") or None,
                              **form.filters())


def rule_value(*, rule: AlertRule, now: datetime) -> float | None:
    """The rule's figure over its window ending at `now`; None when the window holds no data
    for it (or the figure is not a number)."""
    since = now - timedelta(minutes=rule.window_minutes)
    scope: dict[str, Any] = {"agent": rule.agent, "model": rule.model}
    if rule.saved_view_id is not None:
        scope["sessions"] = _sessions(rule.saved_view)  # type: ignore[arg-type]  # set: saved_view_id
        if scope["sessions"] is None:
            return None
    if rule.metric == AlertRule.Metric.CACHE_BREAKS:
        value: float | None = float(cache_breaks_in_window(workspace=rule.workspace, since=since, until=now,
                                                           **scope))
    else:
        errors = rule.metric == AlertRule.Metric.ERRORS  # one read or the other
        cell = window_figures(workspace=rule.workspace, since=since, until=now, calls=not errors,
                              errors=errors, **scope)
        value = {AlertRule.Metric.COST: float(cell.cost), AlertRule.Metric.ERRORS: float(cell.errors),
                 AlertRule.Metric.HIT_RATE: cell.hit_rate,
                 AlertRule.Metric.LATENCY_P95: cell.p95}[AlertRule.Metric(rule.metric)]
    return None if value is None or math.isnan(value) else float(value)


def breached(value: float, comparison: str, threshold: float) -> bool:
    return {"gt": value > threshold, "gte": value >= threshold, "lt": value < threshold,
            "lte": value <= threshold}[comparison]


def alert_rule_evaluate(*, rule: AlertRule, now: datetime | None = None) -> AlertEvent | None:
    """Checks the rule once; the event recorded when its state changed, else None."""
    now = now or timezone.now()
    value = rule_value(rule=rule, now=now)
    with transaction.atomic():
        locked = AlertRule.objects.select_for_update().filter(pk=rule.pk).first()
        if locked is None:  # deleted meanwhile
            return None
        locked.last_value, locked.last_evaluated_at = value, now
        state = locked.state
        if value is not None:
            state = (AlertRule.State.FIRING if breached(value, locked.comparison, locked.threshold)
                     else AlertRule.State.OK)
        event = None
        if state != locked.state:
            locked.state, locked.state_since = state, now
            event = AlertEvent.objects.create(
                workspace_id=locked.workspace_id, rule=locked, value=value, threshold=locked.threshold,
                condition=locked.condition,
                kind=AlertEvent.Kind.FIRING if state == AlertRule.State.FIRING else AlertEvent.Kind.RESOLVED,
                delivery=AlertEvent.Delivery.PENDING if locked.webhook_url else AlertEvent.Delivery.NONE)
            if locked.webhook_url:
                pk = event.pk
                transaction.on_commit(lambda: publish_after_commit(send_delivery, pk))
        locked.save(update_fields=["last_value", "last_evaluated_at", "state", "state_since"])
    for name in ("last_value", "last_evaluated_at", "state", "state_since"):
        setattr(rule, name, getattr(locked, name))
    return event


def alerts_evaluate(*, now: datetime | None = None, batch: int = BATCH) -> dict[str, int]:
    """Beat's pass: the enabled rules not checked for ALERTS_EVALUATE_EVERY seconds, those
    checked longest ago first, at most `batch`."""
    now = now or timezone.now()
    due = now - timedelta(seconds=settings.ALERTS_EVALUATE_EVERY) + timedelta(seconds=1)
    rules = list(AlertRule.objects.filter(Q(last_evaluated_at__isnull=True) | Q(last_evaluated_at__lt=due),
                                          enabled=True)
                 .select_related("workspace", "saved_view", "saved_view__workspace")
                 .order_by(F("last_evaluated_at").asc(nulls_first=True), "pk")[:batch])
    changed = 0
    for rule in rules:
        try:
            changed += alert_rule_evaluate(rule=rule, now=now) is not None
        except Exception:  # noqa: BLE001 - one rule's failure must not stop the others
            logger.exception("could not check alert rule %s", rule.pk)
    return {"checked": len(rules), "changed": changed}


# ------------------------------------------------------------------ delivery


LOST_AFTER = timedelta(minutes=5)  # a delivery never tried by then: its message was not sent


def alert_deliveries_recover(*, now: datetime | None = None) -> int:
    """Queues again the deliveries no worker ever tried LOST_AFTER after they were recorded (a
    broker that was down when the check committed, a process that died before it published);
    one being retried has attempts and is left to its task. Run with beat's check."""
    now = now or timezone.now()
    lost = list(AlertEvent.objects.filter(delivery=AlertEvent.Delivery.PENDING, attempts=0,
                                          created_at__lt=now - LOST_AFTER)
                .order_by("pk").values_list("pk", flat=True)[:BATCH])
    for pk in lost:
        send_delivery(pk)
    return len(lost)


def send_delivery(event_id: int) -> None:
    try:
        current_app.tasks[DELIVER_TASK].delay(int(event_id))
    except Exception:  # noqa: BLE001 - any broker failure; the event stays pending
        logger.exception("could not send alert event %s to the broker", event_id)


def payload(event: AlertEvent) -> dict[str, Any]:
    rule = event.rule
    return {"id": event.pk, "kind": event.kind, "workspace": rule.workspace.slug,
            "created_at": event.created_at.isoformat(), "value": event.value, "threshold": event.threshold,
            "condition": event.condition,
            "rule": {"id": rule.pk, "name": rule.name, "metric": rule.metric, "comparison": rule.comparison,
                     "window_minutes": rule.window_minutes, "agent": rule.agent, "model": rule.model,
                     "saved_view": rule.saved_view_id}}


def alert_event_deliver(*, event_id: int, last: bool) -> bool:
    """One attempt at posting the event to its rule's webhook, recorded on the event. True when
    there is nothing more to do (delivered, no webhook, or `last` attempt failed: FAILED)."""
    event = AlertEvent.objects.select_related("rule", "rule__workspace").filter(pk=event_id).first()
    if event is None or event.delivery in (AlertEvent.Delivery.DELIVERED, AlertEvent.Delivery.NONE):
        return True
    rule = event.rule
    body = json.dumps(payload(event), separators=(",", ":")).encode()
    attempt = webhooks.post(rule.webhook_url, body=body, secret=rule.secret, timestamp=str(int(time.time())),
                            event=f"alert.{event.kind}", timeout=settings.ALERT_WEBHOOK_TIMEOUT,
                            allow_private=settings.ALERT_WEBHOOK_ALLOW_PRIVATE)
    now = timezone.now()
    done = attempt.ok or last
    delivery = (AlertEvent.Delivery.DELIVERED if attempt.ok
                else AlertEvent.Delivery.FAILED if last else AlertEvent.Delivery.PENDING)
    AlertEvent.objects.filter(pk=event.pk).update(
        attempts=F("attempts") + 1, last_attempt_at=now, response_status=attempt.status,
        last_error=attempt.error, delivery=delivery, delivered_at=now if attempt.ok else None)
    return done
