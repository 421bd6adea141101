from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission

from contextstore.models import ApiToken

if TYPE_CHECKING:  # rest_framework.views imports this module through api_settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


class TokenScope(BasePermission):
    """Any active token may read; only a write-scoped token may change anything."""

    message = "This token has read scope; changes need a token with write scope."
    code = "scope"

    def has_permission(self, request: "Request", view: "APIView") -> bool:
        token = request.auth
        if not isinstance(token, ApiToken):
            return False
        return request.method in SAFE_METHODS or token.can_write


class AdminScope(BasePermission):
    """Operations on a workspace's people (erasure) need a token of admin scope."""

    message = "Erasing a person needs a token with admin scope."
    code = "scope"

    def has_permission(self, request: "Request", view: "APIView") -> bool:
        token = request.auth
        return isinstance(token, ApiToken) and token.can_admin
