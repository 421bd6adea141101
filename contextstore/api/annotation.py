"""Score configurations and annotation queues through the API (docs/api.md, "Annotation
queues"): /api/v1/score-configs/, /api/v1/annotation-queues/ and a queue's items/. Reading
needs any token, changing a write token; another workspace's config, queue or item is a 404.
An item completed through the API is completed by the token (its scores are the token's)."""

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.annotationspec import checked_scores, score_config_fields
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.scores import ScoreSerializer, ScoreValueField
from contextstore.errors import InvalidInput
from contextstore.models import AnnotationItem, AnnotationQueue, ScoreConfig, Session, Thread
from contextstore.selectors.annotation import queue_configs_for, queue_items, queue_progress
from contextstore.selectors.calls import llm_call_at
from contextstore.services import annotation as service

# What Python's str.strip() leaves something of, in ECMA 262's terms (its \s lacks these four
# separators and NEL, which Python counts as whitespace).
NOT_BLANK = r"[^\s\x1c-\x1f\x85]"
NAME_PATTERN = f"^[^:\\u0000]*{NOT_BLANK[:-1]}:\\u0000][^:\\u0000]*$"
ID_MAX = 2**63 - 1  # a bigint; past it a lookup would overflow, not miss
NO_CATEGORIES = {"categories": {"maxItems": 0}}
NO_BOUNDS = {"min_value": {"not": {"type": "number"}}, "max_value": {"not": {"type": "number"}}}


class ScoreConfigInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, trim_whitespace=False,
                                 help_text="At most 100 characters, no ':'; unique in the workspace.")
    data_type = serializers.ChoiceField(choices=ScoreConfig.DataType.choices)
    min_value = serializers.FloatField(required=False, allow_null=True, default=None,
                                       help_text="numeric only: the lowest value allowed.")
    max_value = serializers.FloatField(required=False, allow_null=True, default=None,
                                       help_text="numeric only: the highest value allowed.")
    categories = serializers.ListField(
        child=serializers.RegexField(NOT_BLANK, max_length=200, trim_whitespace=False), required=False,
        default=list, max_length=50, help_text="categorical only (and required): the values allowed.")
    description = serializers.CharField(required=False, allow_blank=True, default="",
                                        max_length=10_000, trim_whitespace=False)
    schema_rules = {
        "properties": {"name": {"pattern": NAME_PATTERN}},
        "x-at-most": {"min_value": "max_value"},
        "oneOf": [
            {"properties": {"data_type": {"pattern": "^numeric$"}, **NO_CATEGORIES}},
            {"properties": {"data_type": {"pattern": "^categorical$"}, "categories": {"minItems": 1},
                            **NO_BOUNDS}, "required": ["categories"]},
            {"properties": {"data_type": {"pattern": "^boolean$"}, **NO_CATEGORIES, **NO_BOUNDS}},
        ],
    }


class ScoreConfigSerializer(serializers.ModelSerializer):
    categories = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = ScoreConfig
        fields = ["id", "name", "data_type", "min_value", "max_value", "categories",
                  "description", "archived", "created_at"]
        read_only_fields = fields


class ArchiveSerializer(serializers.Serializer):
    archived = serializers.BooleanField(default=True)


@extend_schema(tags=["annotation"])
class ScoreConfigViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = ScoreConfigSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[ScoreConfig]:
        return ScoreConfig.objects.filter(workspace=token_of(self.request).workspace)

    @extend_schema(request=ScoreConfigInSerializer, responses={201: ScoreConfigSerializer},
                   summary="Configure a score name")
    def create(self, request: Request) -> Response:
        fields = score_config_fields(**parse(ScoreConfigInSerializer, body(request)))
        config = service.score_config_create(workspace=token_of(request).workspace,
                                             actor=actor_of(request), **fields)
        return Response(ScoreConfigSerializer(config).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ArchiveSerializer, responses={200: ScoreConfigSerializer},
                   summary="Archive (or restore) a score configuration")
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, pk: str) -> Response:
        config = self.get_object()
        data = parse(ArchiveSerializer, body(request))
        config = service.score_config_archive(config=config, archived=data["archived"],
                                              actor=actor_of(request))
        return Response(ScoreConfigSerializer(config).data)


class QueueInSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, trim_whitespace=False)
    description = serializers.CharField(required=False, allow_blank=True, default="",
                                        max_length=10_000, trim_whitespace=False)
    score_config_ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=ID_MAX),
                                             min_length=1, max_length=50,
                                             help_text="The workspace's unarchived score configs.")
    assignees = serializers.ListField(child=serializers.CharField(max_length=150), required=False,
                                      default=list, max_length=100,
                                      help_text="Usernames of the workspace's members.")
    schema_rules = {"properties": {"name": {"pattern": NOT_BLANK}}}


class QueueSerializer(serializers.ModelSerializer):
    score_config_ids = serializers.SerializerMethodField()
    assignees = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = AnnotationQueue
        fields = ["id", "name", "description", "score_config_ids", "assignees", "progress",
                  "created_at"]
        read_only_fields = fields

    def get_score_config_ids(self, queue: AnnotationQueue) -> list[int]:
        return sorted(c.pk for c in queue.score_configs.all())

    def get_assignees(self, queue: AnnotationQueue) -> list[str]:
        return sorted(u.get_username() for u in queue.assignees.all())

    def get_progress(self, queue: AnnotationQueue) -> dict[str, int]:
        return queue_progress(queue=queue)


class ItemTargetSerializer(serializers.Serializer):
    session = serializers.IntegerField(min_value=1, max_value=ID_MAX, required=False,
                                       help_text="A session (alone).")
    thread = serializers.IntegerField(min_value=1, max_value=ID_MAX, required=False,
                                      help_text="A thread, or with seq an LLM call of it.")
    seq = serializers.IntegerField(min_value=1, max_value=ID_MAX, required=False,
                                   help_text="The seq of the call's LLMCallStart or LLMComplete.")
    schema_rules = {"oneOf": [
        {"required": ["session"], "not": {"anyOf": [{"required": ["thread"]}, {"required": ["seq"]}]}},
        {"required": ["thread"], "not": {"required": ["session"]}},
    ]}


class ItemsInSerializer(serializers.Serializer):
    # max_length goes to the ListSerializer many=True makes; the stubs know only the child's.
    items = ItemTargetSerializer(many=True, allow_empty=False, max_length=1000)  # type: ignore[call-arg]


class AddedSerializer(serializers.Serializer):
    added = serializers.IntegerField()


class ItemSerializer(serializers.ModelSerializer):
    queue = serializers.IntegerField(source="queue_id", read_only=True)
    session = serializers.IntegerField(source="session_id", read_only=True)
    thread = serializers.IntegerField(source="thread_id", read_only=True, allow_null=True)
    completed_by = serializers.CharField(source="completed_label", read_only=True)

    class Meta:
        model = AnnotationItem
        fields = ["id", "queue", "kind", "session", "thread", "seq", "status", "completed_by",
                  "completed_at", "created_at"]
        read_only_fields = fields


class ItemScoreSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="One of the queue's score configs.")
    value = ScoreValueField(help_text="As the config's data type asks.")
    comment = serializers.CharField(required=False, allow_blank=True, max_length=10_000, default="",
                                    trim_whitespace=False)


class CompleteSerializer(serializers.Serializer):
    scores = ItemScoreSerializer(many=True, max_length=50)  # type: ignore[call-arg]  # as ItemsInSerializer


class CompletedSerializer(serializers.Serializer):
    item = ItemSerializer()
    scores = ScoreSerializer(many=True)


class ItemQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=AnnotationItem.Status.choices, required=False)


@extend_schema(tags=["annotation"])
class AnnotationQueueViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = QueueSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[AnnotationQueue]:
        return (AnnotationQueue.objects.filter(workspace=token_of(self.request).workspace)
                .prefetch_related("score_configs", "assignees").order_by("id"))

    @extend_schema(request=QueueInSerializer, responses={201: QueueSerializer},
                   summary="Create an annotation queue")
    def create(self, request: Request) -> Response:
        data = parse(QueueInSerializer, body(request))
        workspace = token_of(request).workspace
        if not data["name"].strip():
            raise InvalidInput("Name the queue.", details={"name": "required"})
        configs = queue_configs_for(workspace_id=workspace.pk, ids=data["score_config_ids"])
        users = list(User.objects.filter(memberships__workspace=workspace,
                                         username__in=data["assignees"]).distinct())
        unknown = set(data["assignees"]) - {u.username for u in users}
        if unknown:
            raise Http404(f"No member {sorted(unknown)[0]!r} in this workspace.")
        queue = service.queue_create(workspace=workspace, actor=actor_of(request),
                                     name=data["name"].strip(), configs=configs, assignees=users,
                                     description=data["description"].strip())
        return Response(QueueSerializer(queue).data, status=status.HTTP_201_CREATED)


def _target(workspace_id: int, raw: dict[str, Any]) -> tuple[Session, Thread | None, int | None]:
    if "session" in raw:
        return get_object_or_404(Session, workspace_id=workspace_id, pk=raw["session"]), None, None
    thread = get_object_or_404(Thread.objects.select_related("session"), workspace_id=workspace_id,
                               pk=raw["thread"])
    if raw.get("seq") is None:
        return thread.session, thread, None
    call = llm_call_at(thread=thread, seq=raw["seq"])
    if call is None:
        raise Http404(f"No LLM call at seq {raw['seq']} of thread {thread.pk}.")
    return thread.session, thread, call.seq


@extend_schema(tags=["annotation"],
               parameters=[OpenApiParameter("queue_pk", int, OpenApiParameter.PATH)])
class AnnotationItemViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = ItemSerializer
    lookup_value_regex = "[0-9]+"

    def queue(self) -> AnnotationQueue:
        return get_object_or_404(AnnotationQueue, workspace=token_of(self.request).workspace,
                                 pk=self.kwargs["queue_pk"])

    def get_queryset(self) -> QuerySet[AnnotationItem]:
        query = parse(ItemQuerySerializer, self.request.query_params) if self.action == "list" else {}
        return queue_items(queue=self.queue(), status=query.get("status"))

    @extend_schema(parameters=[ItemQuerySerializer], summary="A queue's items, in review order")
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ItemsInSerializer, responses={201: AddedSerializer},
                   summary="Add sessions, threads or LLM calls to a queue")
    def create(self, request: Request, queue_pk: str) -> Response:
        queue = self.queue()
        data = parse(ItemsInSerializer, body(request))
        targets = [_target(queue.workspace_id, raw) for raw in data["items"]]
        added = service.queue_add_items(queue=queue, targets=targets, actor=actor_of(request))
        return Response({"added": added}, status=status.HTTP_201_CREATED)

    @extend_schema(request=CompleteSerializer, responses={200: CompletedSerializer},
                   summary="Complete an item with its scores")
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, queue_pk: str, pk: str) -> Response:
        item = self.get_object()
        data = parse(CompleteSerializer, body(request))
        scores = checked_scores(list(item.queue.score_configs.all()), data["scores"])
        made = service.queue_complete_item(item=item, scores=scores, actor=actor_of(request))
        item.refresh_from_db()
        return Response({"item": ItemSerializer(item).data,
                         "scores": ScoreSerializer(made, many=True).data})
