"""The one per-token request rate limit, a fixed window counted in the cache, shared by every
way an API token comes in: the REST API (api/throttling.py) and OTLP exports (views/otlp.py)
count against the same window, so a token throttled on one is throttled on the other.

DRF's SimpleRateThrottle keeps every request time of the window in one cache entry, which
grows with the allowed rate; a counter per window costs the same at any rate.
"""

import logging
import time

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)
PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SCOPE = "token"


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """'600/minute' -> (600, 60); None, '' or 'off' disables throttling."""
    if not rate or rate.strip().lower() in {"off", "none", "0"}:
        return None
    count, period = rate.split("/")
    return int(count), PERIODS[period.strip()[0].lower()]


def token_rate() -> tuple[int, int] | None:
    """The token rate in force (API_THROTTLE_RATE), read on every request so settings
    overrides (tests, reloads) apply at once."""
    rates = settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES") or {}
    return parse_rate(rates.get(SCOPE) if isinstance(rates, dict) else None)


def token_throttle(token_pk: int, rate: tuple[int, int] | None) -> float | None:
    """Count one request of the token; None when it is allowed, else the seconds until its
    window ends (the Retry-After). A cache that is down lets the request through: a rate limit
    is a guard, not the service."""
    if rate is None:
        return None
    limit, period = rate
    now = time.time()
    window = int(now // period)
    key = f"throttle:{SCOPE}:{token_pk}:{period}:{window}"
    try:
        count = _count(key, period + 1)
    except Exception:  # noqa: BLE001 - the cache is down or stuck (bounded by its timeouts)
        logger.warning("rate-limit cache unavailable; request let through", exc_info=True)
        return None
    return None if count <= limit else (window + 1) * period - now


def retry_after_header(wait: float) -> str:
    """Whole seconds, at least one (a client must not retry at once)."""
    return str(max(int(wait + 0.999), 1))


def _count(key: str, timeout: int) -> int:
    """This request's number in its window. On Redis one round trip (INCR and EXPIRE in one
    pipeline): Django's add, then incr (EXISTS, INCR) took three on every API request, more
    than the thread read itself. Other caches count in-process: add, then incr."""
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        name = cache.make_and_validate_key(key)
        pipe = cache._cache.get_client(name, write=True).pipeline()
        pipe.incr(name)
        pipe.expire(name, timeout)
        count, _ = pipe.execute()
        return count
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=timeout)
        return 1
