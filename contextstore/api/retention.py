"""Retention through the API: GET/PATCH /api/v1/workspace/retention/ (the token's workspace's
policy; changing it needs admin scope) and GET/PATCH /api/v1/sessions/{id}/retention/ (a
session's override, write scope; its legal hold, admin scope). Both go through
services.retention.retention_policy_set, the admin's path too: the same rules, an audit row
for every change."""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.models import Session
from contextstore.retentionspec import DAYS_MAX
from contextstore.services import retention

DAYS_HELP = "Whole days from 1 to {max}; null: no rule here ({inherit})."


class WholeDays(serializers.IntegerField):
    """A number of days as a JSON integer: "30" or 30.0 are refused, as retentionspec refuses them."""

    def __init__(self, inherit: str, **kwargs: Any) -> None:
        super().__init__(required=False, allow_null=True, min_value=1,
                         max_value=DAYS_MAX,
                         help_text=DAYS_HELP.format(max=DAYS_MAX, inherit=inherit), **kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBoolean(serializers.BooleanField):
    """true or false, nothing DRF would read as one ("yes", 1, "on")."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class WorkspaceRetentionInSerializer(serializers.Serializer):
    schema_rules = {"additionalProperties": False}

    event_days = WholeDays("keep events forever",
                           label="Delete events written more than this many days ago")
    session_days = WholeDays("keep inactive sessions forever",
                             label="Delete sessions without activity for this many days")


class WorkspaceRetentionSerializer(serializers.Serializer):
    event_days = serializers.IntegerField(allow_null=True)
    session_days = serializers.IntegerField(allow_null=True)


class SessionRetentionInSerializer(serializers.Serializer):
    schema_rules = {"additionalProperties": False}

    event_days = WholeDays("the workspace's rule")
    session_days = WholeDays("the workspace's rule")
    legal_hold = StrictBoolean(required=False, help_text="Exempts the session from retention; "
                                                         "setting or lifting it needs admin scope.")


class PolicySerializer(serializers.Serializer):
    event_days = serializers.IntegerField(allow_null=True)
    session_days = serializers.IntegerField(allow_null=True)
    legal_hold = serializers.BooleanField()


class SessionRetentionSerializer(serializers.Serializer):
    event_days = serializers.IntegerField(allow_null=True, help_text="The session's own rule; "
                                                                     "null inherits.")
    session_days = serializers.IntegerField(allow_null=True, help_text="The session's own rule; "
                                                                       "null inherits.")
    legal_hold = serializers.BooleanField()
    effective = PolicySerializer(help_text="The rules that apply: the session's, else its "
                                           "workspace's; a legal hold exempts from both.")
    expires_at = serializers.DateTimeField(allow_null=True, help_text="When the whole session "
                                           "is deleted unless it is active again; null: never.")


def _closed(serializer_class: type[serializers.Serializer], raw: dict[str, Any]) -> dict[str, Any]:
    """The body parsed, a member the serializer does not know refused (a typo changes nothing
    rather than nothing silently); the schema says so with additionalProperties: false."""
    unknown = sorted(set(raw) - set(serializer_class._declared_fields))
    if unknown:
        raise ValidationError({unknown[0]: "unknown field"})
    return parse(serializer_class, raw)


def _session_out(session: Session) -> dict[str, Any]:
    policy = retention.policy_of(session)
    return {"event_days": session.retention_event_days,
            "session_days": session.retention_session_days, "legal_hold": session.legal_hold,
            "effective": {"event_days": policy.event_days, "session_days": policy.session_days,
                          "legal_hold": policy.legal_hold},
            "expires_at": retention.session_expires_at(session, policy)}


@extend_schema(tags=["retention"])
class WorkspaceRetentionView(APIView):
    # (no docstring: drf-spectacular would copy it into every operation's description)

    @extend_schema(responses=WorkspaceRetentionSerializer,
                   summary="The workspace's retention policy")
    def get(self, request: Request) -> Response:
        workspace = token_of(request).workspace
        return Response({"event_days": workspace.retention_event_days,
                         "session_days": workspace.retention_session_days})

    @extend_schema(request=WorkspaceRetentionInSerializer, responses=WorkspaceRetentionSerializer,
                   summary="Change the workspace's retention policy (admin scope)",
                   description="Fields left out stay as they are; null removes a rule. Every "
                               "change is written to the audit log.")
    def patch(self, request: Request) -> Response:
        token = token_of(request)
        if not token.can_admin:
            raise PermissionDenied("Changing the workspace's retention policy needs a token "
                                   "with admin scope.", code="scope")
        data = _closed(WorkspaceRetentionInSerializer, body(request))
        workspace = retention.retention_policy_set(target=token.workspace, actor=actor_of(request),
                                                   **data)
        return Response({"event_days": workspace.retention_event_days,
                         "session_days": workspace.retention_session_days})


@extend_schema(tags=["sessions"])
class SessionRetentionViewSet(viewsets.GenericViewSet):
    serializer_class = SessionRetentionSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Session]:
        return Session.objects.filter(workspace=token_of(self.request).workspace).select_related(
            "workspace")

    @extend_schema(methods=["GET"], responses=SessionRetentionSerializer,
                   summary="A session's retention override, legal hold and the policy in effect")
    @extend_schema(methods=["PATCH"], request=SessionRetentionInSerializer,
                   responses=SessionRetentionSerializer,
                   summary="Change a session's retention override or legal hold",
                   description="Fields left out stay as they are; null inherits the workspace's "
                               "rule. legal_hold needs a token with admin scope. Every change is "
                               "written to the audit log.")
    @action(detail=True, methods=["get", "patch"], url_path="retention")
    def retention(self, request: Request, pk: str) -> Response:
        session = self.get_object()
        if request.method == "PATCH":
            raw = body(request)
            if "legal_hold" in raw and not token_of(request).can_admin:
                raise PermissionDenied("Setting or lifting a legal hold needs a token with admin "
                                       "scope.", code="scope")
            data = _closed(SessionRetentionInSerializer, raw)
            session = retention.retention_policy_set(target=session, actor=actor_of(request), **data)
        return Response(_session_out(session))
