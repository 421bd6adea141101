import json
import uuid

import pytest
from rest_framework.test import APIClient

from contextstore.models import Event
from contextstore.services.workspaces import api_token_revoke
from tests.api.conftest import client_for


def test_missing_or_bad_tokens_are_401_in_the_error_shape(thread_url, token, actor):
    anonymous = APIClient().get(thread_url)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "not_authenticated"
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="api"'
    assert client_for("cs_not-a-token").get(thread_url).status_code == 401
    malformed = APIClient().get(thread_url, HTTP_AUTHORIZATION="Bearer a b")
    assert malformed.status_code == 401
    api_token_revoke(token=token[0], actor=actor)
    revoked = client_for(token[1]).get(thread_url)
    assert revoked.status_code == 401
    assert revoked.json()["error"] == {"code": "authentication_failed",
                                       "message": "Invalid or revoked API token.", "details": {}}


def test_unknown_paths_and_methods_answer_in_json(api_client, thread_url):
    for path in ("/api/v1/nothing-here/", "/api/v1/runs/%0A/fail/", "/api/v1/threads/x/"):
        missing = api_client.post(path)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api_client.get("/api/v1/threads/999999/").json()["error"]["code"] == "not_found"
    wrong = api_client.delete(f"{thread_url}state/")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    form = api_client.post(f"{thread_url}events/", {"events": "x"})  # multipart, not JSON
    assert form.status_code == 415


def test_too_many_events_in_a_batch_is_413(api_client, thread, thread_url, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENTS_PER_BATCH": 5}
    response = api_client.post(f"{thread_url}events/",
                               {"events": [{"type": "Message"}] * 6}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Event.objects.filter(thread=thread).count() == 0


def test_event_content_over_the_limit_is_413(api_client, thread, thread_url, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": 100}
    response = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "ok"}, {"type": "Message", "content": "é" * 51}]},
        format="json")
    assert response.status_code == 413
    assert "events[1].content" in response.json()["error"]["details"]
    assert Event.objects.filter(thread=thread).count() == 0


def test_a_body_over_the_request_limit_is_413(api_client, thread, thread_url, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    response = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "x" * 3000}]}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert Event.objects.filter(thread=thread).count() == 0


@pytest.fixture
def tight_throttle(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"token": "3/minute"}}


def test_a_token_over_its_rate_gets_429_with_retry_after(tight_throttle, api_client, read_client,
                                                         thread_url):
    for _ in range(3):
        assert api_client.get(thread_url).status_code == 200
    throttled = api_client.get(thread_url)
    assert throttled.status_code == 429
    assert throttled.json()["error"]["code"] == "throttled"
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert read_client.get(thread_url).status_code == 200  # counted per token


def test_the_rate_is_counted_on_redis(settings, tight_throttle, api_client, thread_url,
                                     monkeypatch):
    # Redis counts in one pipeline (INCR, EXPIRE: ratelimit._count); the same limit holds.
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs a Redis server (CELERY_BROKER_URL)")
    from django.core.cache.backends.redis import RedisCache

    from contextstore import ratelimit

    redis = RedisCache(settings.CELERY_BROKER_URL, {"KEY_PREFIX": f"test-{uuid.uuid4().hex}"})
    monkeypatch.setattr(ratelimit, "caches", {"default": redis})
    assert [api_client.get(thread_url).status_code for _ in range(4)] == [200, 200, 200, 429]
    client = redis._cache.get_client(write=True)
    [key] = client.scan_iter(f"{redis.key_prefix}:*")
    assert int(client.get(key)) == 4 and 0 < client.ttl(key) <= 61
    client.delete(key)


def test_throttling_can_be_switched_off(settings, api_client, thread_url):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "off"}}
    assert all(api_client.get(thread_url).status_code == 200 for _ in range(10))


def test_the_schema_and_docs_are_served_without_a_token(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/v1/threads/{id}/events/" in paths
    post = paths["/api/v1/threads/{id}/events/"]["post"]
    assert {"201", "400", "401", "403", "404", "409", "413", "429", "503"} <= set(post["responses"])
    assert "412" in paths["/api/v1/threads/{id}/state/"]["put"]["responses"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


@pytest.mark.parametrize(("header", "message"), [
    ("Bearer a b", "The Authorization header must be 'Bearer <token>'."),
    ("Bearer", "The Authorization header must be 'Bearer <token>'."),
    ("Bearer cs_not-a-token", "Invalid or revoked API token."),
    ("bearer cs_not-a-token", "Invalid or revoked API token."),
])
def test_the_api_and_the_otlp_receivers_read_the_authorization_header_alike(client, thread_url, header,
                                                                               message):
    api = APIClient().get(thread_url, HTTP_AUTHORIZATION=header)
    otlp = client.post("/otlp/v1/traces", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=header)
    assert api.status_code == otlp.status_code == 401
    assert api.json()["error"]["message"] == otlp.json()["error"]["message"] == message


def test_a_lowercase_scheme_is_accepted_by_the_api_and_the_otlp_receivers(client, thread_url, token):
    assert APIClient().get(thread_url, HTTP_AUTHORIZATION=f"bearer {token[1]}").status_code == 200
    otlp = client.post("/otlp/v1/traces", "{}", content_type="application/json",
                       HTTP_AUTHORIZATION=f"bearer {token[1]}")
    assert otlp.status_code == 200, otlp.content
