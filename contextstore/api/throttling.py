"""Per-token request rate limit, a fixed window counted in the cache.

DRF's SimpleRateThrottle keeps every request time of the window in one cache entry, which
grows with the allowed rate; a counter per window costs the same at any rate.
"""

import logging
import time
from typing import TYPE_CHECKING

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from contextstore.models import ApiToken

if TYPE_CHECKING:  # rest_framework.views imports this module through api_settings
    from rest_framework.request import Request
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)
PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """'600/minute' -> (600, 60); None, '' or 'off' disables throttling."""
    if not rate or rate.strip().lower() in {"off", "none", "0"}:
        return None
    count, period = rate.split("/")
    return int(count), PERIODS[period.strip()[0].lower()]


class TokenRateThrottle(BaseThrottle):
    scope = "token"

    def allow_request(self, request: "Request", view: "APIView") -> bool:
        # Read the rate on every request so settings overrides (tests, reloads) apply at once.
        # rates are "100/min" strings (DRF's stub says numbers)
        parsed = parse_rate(api_settings.DEFAULT_THROTTLE_RATES.get(self.scope))  # type: ignore[arg-type]
        token = request.auth
        if parsed is None or not isinstance(token, ApiToken):
            return True
        limit, period = parsed
        now = time.time()
        window = int(now // period)
        key = f"throttle:{self.scope}:{token.pk}:{period}:{window}"
        try:
            count = _count(key, period + 1)
        except Exception:  # noqa: BLE001 - the cache is down or stuck (bounded by its timeouts)
            # A rate limit is a guard, not the service: answer rather than fail every request.
            logger.warning("rate-limit cache unavailable; request let through", exc_info=True)
            return True
        self._retry_after = (window + 1) * period - now
        return count <= limit

    def wait(self) -> float | None:
        return getattr(self, "_retry_after", None)


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
