"""The model a thread or session runs with: GET/PATCH /api/v1/threads/{id}/model/ and
/api/v1/sessions/{id}/model/. A thread without settings inherits its session's, then its
workspace's; `effective` shows the result and the render budget it gives."""

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.llm_models import thread_model_settings
from contextstore.models import Session, Thread
from contextstore.services.model_settings import MAX_WINDOW, model_settings_update


class ModelSettingsInSerializer(serializers.Serializer):
    # x-at-most (contextstore.api.schema.AT_MOST): a rule between fields JSON Schema cannot state.
    schema_rules = {"description": "reserve_output is smaller than context_window: when both "
                                   "are sent, or 409 when it is not below the one already set.",
                    "x-at-most": {"reserve_output": "context_window - 1"}}

    model = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                  help_text="Blank inherits.")
    context_window = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                              max_value=MAX_WINDOW,
                                              help_text="Tokens; null inherits (or the known "
                                                        "model table fills it in).")
    reserve_output = serializers.IntegerField(required=False, allow_null=True, min_value=0,
                                              max_value=MAX_WINDOW,
                                              help_text="Tokens kept free for the answer; smaller "
                                                        "than the context window in effect.")


class EffectiveSerializer(serializers.Serializer):
    model = serializers.CharField()
    context_window = serializers.IntegerField(allow_null=True)
    reserve_output = serializers.IntegerField()
    budget = serializers.IntegerField(help_text="The render's default max_tokens.")
    source = serializers.CharField(help_text="thread, session, workspace, table or default")  # type: ignore[assignment]  # a field (the metaclass takes it off the class)


class ModelSettingsSerializer(serializers.Serializer):
    model = serializers.CharField()
    context_window = serializers.IntegerField(allow_null=True)
    reserve_output = serializers.IntegerField(allow_null=True)
    effective = EffectiveSerializer(required=False)


def _out(obj: Thread | Session) -> dict[str, Any]:
    data: dict[str, Any] = {"model": obj.model, "context_window": obj.context_window,
                            "reserve_output": obj.reserve_output}
    if isinstance(obj, Thread):
        data["effective"] = thread_model_settings(obj).__dict__
    return data


if TYPE_CHECKING:  # what the mixin is mixed into, as a base the checker sees
    _ViewSet = viewsets.GenericViewSet[Thread | Session]
else:
    _ViewSet = object


class _ModelSettingsMixin(_ViewSet):
    lookup_value_regex = "[0-9]+"

    @extend_schema(methods=["GET"], responses=ModelSettingsSerializer)
    @extend_schema(methods=["PATCH"], request=ModelSettingsInSerializer, responses=ModelSettingsSerializer)
    @action(detail=True, methods=["get", "patch"], url_path="model")
    def model_settings(self, request: Request, pk: str) -> Response:
        obj = self.get_object()
        if request.method == "PATCH":
            data = parse(ModelSettingsInSerializer, body(request))
            model_settings_update(target=obj, actor=actor_of(request), **data)
            obj = self.get_queryset().get(pk=obj.pk)
        return Response(_out(obj))


@extend_schema(tags=["threads"])
class ThreadModelViewSet(_ModelSettingsMixin, viewsets.GenericViewSet):
    serializer_class = ModelSettingsSerializer

    def get_queryset(self) -> QuerySet[Thread]:
        return Thread.objects.filter(workspace=token_of(self.request).workspace).select_related(
            "session", "workspace")


@extend_schema(tags=["sessions"])
class SessionModelViewSet(_ModelSettingsMixin, viewsets.GenericViewSet):
    serializer_class = ModelSettingsSerializer

    def get_queryset(self) -> QuerySet[Session]:
        return Session.objects.filter(workspace=token_of(self.request).workspace)
