"""Every API route keeps the token guards by construction: a route added without them fails
here, whichever module adds it."""

from django.urls import URLResolver, get_resolver
from rest_framework.views import APIView

from contextstore.api.authentication import BearerTokenAuthentication
from contextstore.api.exceptions import api_not_found
from contextstore.api.permissions import TokenScope
from contextstore.api.throttling import TokenRateThrottle

PUBLIC = {"api:schema", "api:docs"}  # the OpenAPI document and its viewer


def _routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, f"{p.namespace}:" if p.namespace else prefix)
        else:
            yield f"{prefix}{p.name}", p.callback


def test_every_api_route_runs_the_token_guards():
    """Each route under /api/ is a DRF view whose authentication, scope and throttle classes
    include the API's (the store's door has its own scope permission), or an answer that reads
    nothing (not found)."""
    api = next(p for p in get_resolver().url_patterns
               if isinstance(p, URLResolver) and p.namespace == "api")
    seen = 0
    for name, callback in _routes(api.url_patterns, "api:"):
        if name in PUBLIC or callback is api_not_found or callback.__name__ == "block_path_not_found":
            continue
        view = getattr(callback, "cls", None)
        assert view is not None and issubclass(view, APIView), name
        assert BearerTokenAuthentication in view.authentication_classes, name
        assert any(issubclass(p, TokenScope) for p in view.permission_classes) or name.startswith(
            "api:store"), name
        assert TokenRateThrottle in view.throttle_classes, name
        seen += 1
    assert seen > 80
