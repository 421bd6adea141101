"""Alert events posted to a webhook (contextstore/webhooks.py, services/alerts.py, the
deliver_alert task) against a local HTTP receiver: the body and its HMAC-SHA256 signature,
a failed attempt retried then delivered, a receiver that is down recorded as failed, a
redirect never followed; and which URLs are refused (server-side request forgery)."""

import hashlib
import hmac
import socket

import pytest

from contextstore import webhooks
from contextstore.models import AlertEvent
from contextstore.services.alerts import alert_event_deliver, alert_rule_create, alert_rule_evaluate
from contextstore.tasks import deliver_alert
from tests.monitoring.conftest import NOW, body_of, call, make_thread

pytestmark = pytest.mark.django_db


def fired(workspace, actor, url: str) -> tuple[AlertEvent, str]:
    """A rule with a webhook that fires (its delivery not sent: the test sends it)."""
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=5, cost=3.0)
    rule, secret = alert_rule_create(
        workspace=workspace,
        actor=actor,
        name="spend",
        metric="cost",
        comparison="gt",
        threshold=1.0,
        window_minutes=60,
        webhook_url=url,
    )
    event = alert_rule_evaluate(rule=rule, now=NOW)
    assert event is not None and event.delivery == "pending"
    return event, secret


def test_the_event_is_posted_as_json_signed_with_the_rules_secret(
    workspace, actor, receiver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        event, secret = fired(workspace, actor, receiver.url)
    assert len(queued) == 1  # the delivery is queued after commit, not made in the check
    assert alert_event_deliver(event_id=event.pk, last=False) is True
    [request] = receiver.received
    headers = {k.lower(): v for k, v in request["headers"].items()}
    expected = hmac.new(
        secret.encode(), headers["x-contextstore-timestamp"].encode() + b"." + request["body"], hashlib.sha256
    ).hexdigest()
    assert headers["x-contextstore-signature"] == f"sha256={expected}"
    assert headers["content-type"] == "application/json" and headers["x-contextstore-event"] == "alert.firing"
    body = body_of(request)
    assert body["kind"] == "firing" and body["value"] == 3.0 and body["threshold"] == 1.0
    assert (
        body["workspace"] == "acme" and body["rule"]["name"] == "spend" and body["rule"]["metric"] == "cost"
    )
    assert secret not in request["body"].decode()
    fresh = AlertEvent.objects.get(pk=event.pk)
    assert (fresh.delivery, fresh.attempts, fresh.response_status) == ("delivered", 1, 200)
    assert fresh.delivered_at is not None and fresh.last_error == ""
    assert alert_event_deliver(event_id=event.pk, last=False) is True  # delivered: not posted again
    assert len(receiver.received) == 1


def test_a_failed_attempt_is_retried_by_the_task_then_delivered(workspace, actor, receiver, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the retry runs at once, in this process
    settings.ALERT_WEBHOOK_BACKOFF = 0
    receiver.statuses = [500, 503]
    event, _ = fired(workspace, actor, receiver.url)
    deliver_alert.apply(args=[event.pk])
    fresh = AlertEvent.objects.get(pk=event.pk)
    assert (fresh.delivery, fresh.attempts, fresh.response_status) == ("delivered", 3, 200)
    assert [body_of(r)["id"] for r in receiver.received] == [event.pk] * 3


def test_a_receiver_that_is_down_is_recorded_as_failed_after_the_last_attempt(workspace, actor, settings):
    settings.ALERT_WEBHOOK_ALLOW_PRIVATE = True
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    event, _ = fired(workspace, actor, f"http://127.0.0.1:{port}/hook")
    assert alert_event_deliver(event_id=event.pk, last=False) is False
    pending = AlertEvent.objects.get(pk=event.pk)
    assert (pending.delivery, pending.attempts) == ("pending", 1) and "ConnectError" in pending.last_error
    assert alert_event_deliver(event_id=event.pk, last=True) is True
    failed = AlertEvent.objects.get(pk=event.pk)
    assert (failed.delivery, failed.attempts, failed.response_status) == ("failed", 2, None)
    assert failed.delivered_at is None


def test_the_task_gives_up_after_its_retries(workspace, actor, receiver, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ALERT_WEBHOOK_BACKOFF = 0
    settings.ALERT_WEBHOOK_RETRIES = 2
    receiver.statuses = [500] * 5
    event, _ = fired(workspace, actor, receiver.url)
    deliver_alert.apply(args=[event.pk])
    fresh = AlertEvent.objects.get(pk=event.pk)
    assert (fresh.delivery, fresh.attempts, fresh.response_status) == ("failed", 3, 500)
    assert len(receiver.received) == 3


def test_a_redirect_is_not_followed(workspace, actor, receiver):
    receiver.statuses = [302]
    receiver.location = "http://169.254.169.254/latest/meta-data/"
    event, _ = fired(workspace, actor, receiver.url)
    assert alert_event_deliver(event_id=event.pk, last=True) is True
    fresh = AlertEvent.objects.get(pk=event.pk)
    assert fresh.delivery == "failed" and fresh.response_status == 302 and "redirect" in fresh.last_error
    assert len(receiver.received) == 1


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example.com/x", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("https://user:pw@hooks.example.com/x", "user name or password"),
        ("http://localhost:8000/x", "this machine"),
        ("http://127.0.0.1/x", "private, local or reserved"),
        ("http://10.0.0.5/x", "private, local or reserved"),
        ("http://169.254.169.254/latest/meta-data/", "private, local or reserved"),
        ("http://[::1]/x", "private, local or reserved"),
        ("http://[::ffff:127.0.0.1]/x", "private, local or reserved"),
        ("http://100.64.0.1/x", "private, local or reserved"),
        ("http:///x", "no host"),
        ("http://[bad/x", "not a valid URL"),
    ],
)
def test_urls_that_are_not_public_http_are_refused(url, why):
    assert why in (webhooks.url_problem(url, allow_private=False) or "")


def test_a_name_that_resolves_to_a_private_address_is_refused_when_posting(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("192.168.1.9", 443))])
    assert "192.168.1.9" in webhooks.url_problem("https://hooks.example.com/x", allow_private=False)
    assert webhooks.url_problem("https://hooks.example.com/x", allow_private=False, resolve=False) is None
    attempt = webhooks.post(
        "https://hooks.example.com/x",
        body=b"{}",
        secret="s",
        timestamp="1",
        event="e",
        timeout=1,
        allow_private=False,
    )
    assert not attempt.ok and "private" in attempt.error


def test_a_public_address_is_allowed():
    assert webhooks.url_problem("https://93.184.215.14/hook", allow_private=False) is None


def test_a_delivery_never_tried_is_queued_again_by_beats_pass(workspace, actor, receiver,
                                                              eager_tasks):
    from datetime import timedelta

    from contextstore.services.alerts import alert_deliveries_recover

    event, _ = fired(workspace, actor, receiver.url)  # its message "lost": never sent here
    assert alert_deliveries_recover(now=event.created_at + timedelta(minutes=4)) == 0  # not yet
    assert alert_deliveries_recover(now=event.created_at + timedelta(minutes=6)) == 1
    assert AlertEvent.objects.get(pk=event.pk).delivery == "delivered" and len(receiver.received) == 1
    assert alert_deliveries_recover(now=event.created_at + timedelta(minutes=60)) == 0
