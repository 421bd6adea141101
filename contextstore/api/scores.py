"""Scores through the API: an evaluator or agent scores a session or one LLM call.

GET/POST /api/v1/sessions/{id}/scores/ and /api/v1/threads/{id}/events/{seq}/scores/ (the seq
of the call's LLMCallStart or LLMComplete). Reading needs any token, scoring a write token;
another workspace's session or thread is a 404."""

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.annotationspec import check_score
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.models import Score, Session, Thread
from contextstore.selectors.calls import llm_call_at
from contextstore.services import scores

VALUE_SCHEMA = {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}]}


@extend_schema_field(VALUE_SCHEMA)
class ScoreValueField(serializers.JSONField):
    """A number, a string or a boolean, as the data type asks (annotationspec checks it)."""


class ScoreInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="At most 100 characters, no ':'.")
    data_type = serializers.ChoiceField(choices=Score.DataType.choices)
    value = ScoreValueField(help_text="numeric: a finite number; categorical: a non-empty "
                                      "string; boolean: true or false.")
    comment = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="",
                                    trim_whitespace=False)


class ProvenanceSerializer(serializers.Serializer):
    evaluator = serializers.IntegerField(source="evaluator_id")
    version = serializers.IntegerField(source="version.number")
    evaluation = serializers.IntegerField(source="pk")


class ScoreSerializer(serializers.ModelSerializer):
    value = serializers.SerializerMethodField(method_name="typed_value")
    author = serializers.CharField(source="author_label", read_only=True)
    evaluator = serializers.SerializerMethodField(
        help_text="An evaluator's score: which evaluator, version and evaluation gave it; else null.")

    class Meta:
        model = Score
        fields = ["id", "session", "thread", "seq", "name", "data_type", "value", "comment",
                  "author", "evaluator", "created_at"]
        read_only_fields = fields

    @extend_schema_field(ProvenanceSerializer(allow_null=True))
    def get_evaluator(self, score: Score) -> dict[str, int] | None:
        evaluation = getattr(score, "evaluation", None)
        return None if evaluation is None else dict(ProvenanceSerializer(evaluation).data)

    @extend_schema_field(VALUE_SCHEMA)
    def typed_value(self, score: Score) -> Any:
        if score.data_type == Score.DataType.NUMERIC:
            return score.value
        if score.data_type == Score.DataType.BOOLEAN:
            return score.string_value == "true"
        return score.string_value


class _ScoreViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = ScoreSerializer

    def target(self) -> tuple[Session, Thread | None, int | None]:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet[Score]:
        session, thread, seq = self.target()
        scores = Score.objects.select_related("evaluation__version")
        if thread is None:  # the session's list holds its calls' scores too
            return scores.filter(session=session)
        return scores.filter(thread=thread, seq=seq)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        session, thread, seq = self.target()
        data = parse(ScoreInSerializer, body(request))
        check_score(**data)
        score = scores.score_add(session=session, thread=thread, seq=seq, actor=actor_of(request),
                                 **data)
        return Response(ScoreSerializer(score).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["scores"],
               parameters=[OpenApiParameter("session_pk", int, OpenApiParameter.PATH)])
class SessionScoreViewSet(_ScoreViewSet):
    # The session's scores and its calls' (thread and seq say which call).

    def target(self) -> tuple[Session, Thread | None, int | None]:
        session = get_object_or_404(Session, workspace=token_of(self.request).workspace,
                                    pk=self.kwargs["session_pk"])
        return session, None, None

    @extend_schema(request=ScoreInSerializer, responses={201: ScoreSerializer},
                   summary="Score a session")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().create(request, *args, **kwargs)


@extend_schema(tags=["scores"],
               parameters=[OpenApiParameter("thread_pk", int, OpenApiParameter.PATH),
                           OpenApiParameter("seq", int, OpenApiParameter.PATH,
                                            description="The seq of the call's LLMCallStart or "
                                                        "LLMComplete.")])
class CallScoreViewSet(_ScoreViewSet):
    # One LLM call's scores, named by its thread and the seq of either of its events.

    def target(self) -> tuple[Session, Thread | None, int | None]:
        thread = get_object_or_404(Thread.objects.select_related("session"),
                                   workspace=token_of(self.request).workspace,
                                   pk=self.kwargs["thread_pk"])
        call = llm_call_at(thread=thread, seq=int(self.kwargs["seq"]))
        if call is None:
            raise Http404("No LLM call at that seq.")
        return thread.session, thread, call.seq

    @extend_schema(request=ScoreInSerializer, responses={201: ScoreSerializer},
                   summary="Score an LLM call")
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().create(request, *args, **kwargs)
