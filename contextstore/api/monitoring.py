"""Saved views and alerts through the API (docs/api.md "Saved views", "Alerts").

/api/v1/saved-views/: the views the token's person sees (theirs and the workspace's shared
ones; a token made by no person sees the shared ones and cannot save). /api/v1/alert-rules/:
the workspace's rules; the webhook secret is in the answer to the POST that made the rule,
never after. /api/v1/alert-events/: what the rules recorded, newest first. Reading needs any
token, changing a write token; another workspace's view, rule or event is a 404."""

from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore import viewspec
from contextstore.alertspec import AlertRuleInSerializer, AlertRulePatchSerializer, rule_scope
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.pagination import OldestFirstCursorPagination
from contextstore.models import AlertEvent, AlertRule, SavedView
from contextstore.selectors.monitoring import alert_events, saved_views_visible
from contextstore.services import alerts, saved_views


def _person(request: Request) -> User | None:
    return token_of(request).created_by


class SavedViewSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(source="owner.username", read_only=True)

    class Meta:
        model = SavedView
        fields = ["id", "page", "name", "query", "shared", "is_default", "owner", "created_at", "updated_at"]
        read_only_fields = fields


class SavedViewInSerializer(serializers.Serializer):
    page = serializers.ChoiceField(choices=SavedView.Page.choices)
    name = serializers.CharField(max_length=100)
    query = serializers.CharField(max_length=viewspec.MAX_QUERY, allow_blank=True, default="",
                                  help_text="The page's query string (filters); normalised when saved.")
    shared = serializers.BooleanField(default=False)
    is_default = serializers.BooleanField(default=False)

    def validate_query(self, value: str) -> str:
        return viewspec.normalise(value.lstrip("?"))


class SavedViewPatchSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False)
    shared = serializers.BooleanField(required=False)
    is_default = serializers.BooleanField(required=False)


@extend_schema(tags=["saved views"])
class SavedViewViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = SavedViewSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[SavedView]:
        return saved_views_visible(workspace=token_of(self.request).workspace, user=_person(self.request))

    @extend_schema(request=SavedViewInSerializer, responses={201: SavedViewSerializer})
    def create(self, request: Request) -> Response:
        person = _person(request)
        if person is None:
            raise PermissionDenied("This token belongs to no person: saved views need an owner (a token "
                                   "made in admin belongs to the person who made it).")
        data = parse(SavedViewInSerializer, body(request))
        view = saved_views.saved_view_create(workspace=token_of(request).workspace, owner=person,
                                             actor=actor_of(request), **data)
        return Response(SavedViewSerializer(view).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SavedViewPatchSerializer, responses={200: SavedViewSerializer})
    def partial_update(self, request: Request, pk: str) -> Response:
        view = self.get_object()
        data = parse(SavedViewPatchSerializer, body(request))
        view = saved_views.saved_view_update(view=view, user=_person(request), actor=actor_of(request),
                                             **data)
        return Response(SavedViewSerializer(view).data)

    def destroy(self, request: Request, pk: str) -> Response:
        view = self.get_object()
        saved_views.saved_view_delete(view=view, user=_person(request), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AlertRuleSerializer(serializers.ModelSerializer):
    webhook_host = serializers.SerializerMethodField(
        help_text="The webhook's host (its URL is not shown again).")

    class Meta:
        model = AlertRule
        fields = ["id", "name", "metric", "comparison", "threshold", "window_minutes", "agent", "model",
                  "saved_view", "webhook_host", "enabled", "condition", "state", "state_since", "last_value",
                  "last_evaluated_at", "created_at"]
        read_only_fields = fields

    def get_webhook_host(self, rule: AlertRule) -> str:
        return urlsplit(rule.webhook_url).hostname or "" if rule.webhook_url else ""


class AlertRuleCreatedSerializer(AlertRuleSerializer):
    secret = serializers.CharField(read_only=True, help_text="The webhook's signing key: shown this once.")

    class Meta(AlertRuleSerializer.Meta):
        fields = [*AlertRuleSerializer.Meta.fields, "secret"]
        read_only_fields = fields


@extend_schema(tags=["alerts"])
class AlertRuleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = AlertRuleSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[AlertRule]:
        return AlertRule.objects.filter(workspace=token_of(self.request).workspace)

    @extend_schema(request=AlertRuleInSerializer, responses={201: AlertRuleCreatedSerializer})
    def create(self, request: Request) -> Response:
        token = token_of(request)
        data = rule_scope(token.workspace, _person(request), parse(AlertRuleInSerializer, body(request)))
        rule, secret = alerts.alert_rule_create(workspace=token.workspace, actor=actor_of(request),
                                                created_by=token.created_by, **data)
        out = AlertRuleSerializer(rule).data
        return Response({**out, "secret": secret}, status=status.HTTP_201_CREATED)

    @extend_schema(request=AlertRulePatchSerializer, responses={200: AlertRuleSerializer})
    def partial_update(self, request: Request, pk: str) -> Response:
        rule = self.get_object()
        data = rule_scope(rule.workspace, _person(request), parse(AlertRulePatchSerializer, body(request)))
        rule = alerts.alert_rule_update(rule=rule, actor=actor_of(request), **data)
        return Response(AlertRuleSerializer(rule).data)

    def destroy(self, request: Request, pk: str) -> Response:
        alerts.alert_rule_delete(rule=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AlertEventSerializer(serializers.ModelSerializer):
    rule_name = serializers.CharField(source="rule.name", read_only=True)

    class Meta:
        model = AlertEvent
        fields = ["id", "rule", "rule_name", "kind", "value", "threshold", "condition", "created_at",
                  "delivery", "attempts", "last_attempt_at", "delivered_at", "response_status", "last_error"]
        read_only_fields = fields


class NewestFirstCursorPagination(OldestFirstCursorPagination):
    ordering = "-id"


@extend_schema(tags=["alerts"], parameters=[OpenApiParameter("rule", int, description="One rule's events.")])
class AlertEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = AlertEventSerializer
    pagination_class = NewestFirstCursorPagination
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[AlertEvent]:
        events = alert_events(workspace=token_of(self.request).workspace)
        rule = self.request.query_params.get("rule", "").strip()
        if rule:
            try:
                rule_id = int(rule)
            except ValueError:
                raise ValidationError({"rule": ["A rule's id."]}) from None
            # an id no rule can have (not positive, past a bigint) has no events
            events = events.filter(rule_id=rule_id) if 0 < rule_id < 2**63 else events.none()
        return events



