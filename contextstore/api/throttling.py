"""Per-token request rate limit of the REST API: the policy itself (a fixed window counted in
the cache, shared with OTLP exports) is contextstore/ratelimit.py."""

from typing import TYPE_CHECKING

from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from contextstore.models import ApiToken
from contextstore.ratelimit import parse_rate, token_throttle

if TYPE_CHECKING:  # rest_framework.views imports this module through api_settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


class TokenRateThrottle(BaseThrottle):
    scope = "token"

    def allow_request(self, request: "Request", view: "APIView") -> bool:
        # Read the rate on every request so settings overrides (tests, reloads) apply at once.
        # rates are "100/min" strings (DRF's stub says numbers)
        parsed = parse_rate(api_settings.DEFAULT_THROTTLE_RATES.get(self.scope))  # type: ignore[arg-type]
        token = request.auth
        if parsed is None or not isinstance(token, ApiToken):
            return True
        self._retry_after = token_throttle(token.pk, parsed)
        return self._retry_after is None

    def wait(self) -> float | None:
        return getattr(self, "_retry_after", None)
