"""A cache that accepts connections and never answers: requests still answer, in bounded time
(the cache's socket timeouts), because the rate limit lets requests through when it cannot
count."""

import time

import pytest

from tests.frozen import frozen_server


@pytest.fixture
def frozen_cache(settings):
    before = settings.CACHES
    with frozen_server() as port:
        settings.CACHES = {"default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/8",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                                   "DEFAULT_THROTTLE_RATES": {"token": "100/minute"}}
        yield  # changing CACHES gives fresh cache objects (Django's setting_changed handler)
        settings.CACHES = before  # before other fixtures' teardown clears "the" cache


def test_a_frozen_cache_costs_its_timeout_not_the_request(frozen_cache, api_client, thread_url):
    started = time.monotonic()
    response = api_client.get(thread_url)
    assert response.status_code == 200
    assert time.monotonic() - started < 3
