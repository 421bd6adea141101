"""Alerts through the real Celery path: beat's task sent to a worker process (Redis broker),
which checks the rule, records the event and queues its delivery; the same worker posts it to a
local receiver, whose first answer is a 500, so the delivery is retried by Celery and lands."""

import pytest
from django.utils import timezone

from contextstore.models import AlertEvent, AlertRule
from contextstore.services.alerts import alert_rule_create
from contextstore.tasks import evaluate_alerts
from tests.monitoring.conftest import body_of, call, make_thread
from tests.monitoring.conftest import receiver as webhook  # noqa: F401 - the fixture, as `webhook`
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker


def test_a_worker_checks_the_rules_and_delivers_the_event_after_a_retry(make_worker, workspace, actor,
                                                                        request):
    receiver = request.getfixturevalue("webhook")
    receiver.statuses = [500]
    make_worker(ALERT_WEBHOOK_ALLOW_PRIVATE="true", ALERT_WEBHOOK_BACKOFF="0",
                ALERTS_EVALUATE_EVERY="1").start()
    call(make_thread(workspace, actor), actor, minutes_ago=1, cost=4.0, now=timezone.now())
    rule, _ = alert_rule_create(workspace=workspace, actor=actor, name="spend", metric="cost",
                                comparison="gt",
                                threshold=1.0, window_minutes=15, webhook_url=receiver.url)
    evaluate_alerts.delay()
    event = wait_for(lambda: AlertEvent.objects.filter(rule=rule, delivery="delivered").first(),
                     what="the event delivered")
    assert (event.kind, event.value, event.attempts, event.response_status) == ("firing", 4.0, 2, 200)
    assert AlertRule.objects.get(pk=rule.pk).state == "firing"
    assert [body_of(r)["id"] for r in receiver.received] == [event.pk, event.pk]
