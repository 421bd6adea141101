"""The framework sync protocol: GET loads a thread as keyed items, POST saves (services/sync.py)."""

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore import syncspec
from contextstore.api.common import actor_of, body, parse, token_of
from contextstore.api.schema import ObjectListSchema
from contextstore.api.serializers import (
    JSON_ANY,
    AgentText,
    EventInSerializer,
    EventSerializer,
)
from contextstore.models import Thread
from contextstore.services import sync
from contextstore.services.common import UNSET

# syncspec's namespace rule: letters and digits of any script (str.isalnum), ".", "_"
# and "-". ECMA 262 in Unicode mode, as JSON Schema validators read it.
NAMESPACE_PATTERN = "^[\\p{L}\\p{N}._-]{1,64}$"


class SyncItemSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The framework's own id of the item, or `cs:<seq>` "
                                          "for an item someone else added.")
    own = serializers.BooleanField(help_text="Stored by this namespace (false: a person's note, "
                                             "a collapse's summary, another framework's item).")
    digest = serializers.CharField(help_text="Digest of the event as last saved (own items).")
    event = EventSerializer()


class SyncLoadSerializer(serializers.Serializer):
    revision = serializers.IntegerField(help_text="Send it back as base_revision when saving.")
    state = serializers.DictField()
    summary = serializers.CharField()
    document = JSON_ANY(allow_null=True, help_text="The namespace's part of the thread document.")
    items = SyncItemSerializer(many=True, help_text="The working context in order.")
    rendered = JSON_ANY(required=False, help_text="With format=peteos: the same moment as a "
                                                  "peteos context JSON.")


class SyncEventInSerializer(EventInSerializer):
    """An event as in POST events/, without client_id: the item's key identifies it."""

    client_id = None  # type: ignore[assignment]  # DRF: None removes the inherited field


class SyncSaveInItemSerializer(serializers.Serializer):
    schema_rules = {"additionalProperties": False}  # syncspec refuses other fields

    key = serializers.CharField(max_length=syncspec.KEY_MAX)
    event = SyncEventInSerializer()


class SyncSaveInSerializer(serializers.Serializer):
    # The view refuses unknown fields; syncspec, a namespace of other characters. The rules
    # between fields: x-at-most and x-unique-by (contextstore.api.schema.AT_MOST).
    schema_rules = {
        "description": "part < parts; a save in several parts names an upload_id; each item's "
                       "key once. The last part of an upload whose earlier parts never arrived "
                       "is a conflict (409).",
        "additionalProperties": False,
        "properties": {"namespace": {"pattern": NAMESPACE_PATTERN}},
        "anyOf": [{"properties": {"parts": {"maximum": 1}}}, {"required": ["upload_id"]}],
        "x-at-most": {"part": "parts - 1"},
        "x-unique-by": {"items": "key"},
    }

    namespace = serializers.CharField(max_length=syncspec.NAMESPACE_MAX)
    base_revision = serializers.IntegerField(
        required=False, allow_null=True, min_value=0,
        help_text="The revision loaded; a stale one is refused (412). null: unconditional.")
    items = SyncSaveInItemSerializer(many=True, required=False,
                                     help_text="New or changed items, in transcript order.")
    # Keys and upload ids are the framework's, kept verbatim (not trimmed) as the service takes them.
    removed = serializers.ListField(child=serializers.CharField(max_length=syncspec.KEY_MAX,
                                                                trim_whitespace=False),
                                    required=False,
                                    help_text="Keys the framework dropped.")
    state = serializers.DictField(required=False)
    memory = serializers.ListField(child=serializers.DictField(), required=False)
    summary = AgentText(required=False, allow_blank=True)
    last_results = serializers.DictField(required=False, help_text="clientai's step results.")
    document = JSON_ANY(required=False, allow_null=True,
                        help_text="The namespace's part of the thread document (null removes).")
    upload_id = serializers.CharField(required=False, max_length=64, trim_whitespace=False,
                                      help_text="Names one save; parts share it; a replay of "
                                                "an applied save returns its answer.")
    part = serializers.IntegerField(required=False, default=0, min_value=0)
    parts = serializers.IntegerField(required=False, default=1, min_value=1)


class SyncResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["staged", "applied"])
    revision = serializers.IntegerField(required=False)
    created = serializers.IntegerField(required=False)
    rewritten = serializers.IntegerField(required=False)
    removed = serializers.IntegerField(required=False)
    unchanged = serializers.IntegerField(required=False)
    stored = serializers.ListField(child=serializers.DictField(), required=False,
                                   help_text="key, seq and position of each item written.")


FIELDS = {"namespace", "base_revision", "items", "removed", "state", "memory", "summary",
          "last_results", "document", "upload_id", "part", "parts"}


@extend_schema(tags=["threads"])
class ThreadSyncViewSet(viewsets.GenericViewSet):
    """/threads/{id}/sync/: one protocol for every framework adapter."""

    serializer_class = SyncLoadSerializer
    pagination_class = None
    schema = ObjectListSchema()

    def get_queryset(self) -> QuerySet[Thread]:
        return Thread.objects.filter(workspace=token_of(self.request).workspace)

    def thread(self) -> Thread:
        return self.get_object()

    def get_object(self) -> Thread:

        return get_object_or_404(self.get_queryset(), pk=self.kwargs["thread_pk"])

    @extend_schema(parameters=[OpenApiParameter("namespace", str, required=True,
                                               pattern=NAMESPACE_PATTERN),
                               OpenApiParameter("format", str, enum=["peteos"])],
                   responses=SyncLoadSerializer,
                   summary="Load the working context as keyed items of a framework namespace")
    def list(self, request: Request, thread_pk: str) -> Response:
        thread = self.get_object()
        namespace, format = request.query_params.get("namespace"), request.query_params.get("format")
        syncspec.check_load(namespace, format)
        assert namespace is not None  # (checked)
        loaded = sync.sync_load(thread=thread, namespace=namespace, format=format)
        loaded["items"] = [{**item, "event": EventSerializer(item["event"]).data}
                           for item in loaded["items"]]
        return Response(loaded, headers={"ETag": f'"{loaded["revision"]}"'})

    @extend_schema(request=SyncSaveInSerializer,
                   responses={200: SyncResultSerializer, 202: SyncResultSerializer},
                   summary="Save a framework's transcript changes (one transaction; 412 if stale)")
    def create(self, request: Request, thread_pk: str) -> Response:
        data: dict[str, Any] = body(request)
        unknown = set(data) - FIELDS
        if unknown:
            raise serializers.ValidationError({sorted(unknown)[0]: "unknown field"})
        # The fields' types here, the save's rules in syncspec; the service checks each item's
        # event after redaction, as an append does.
        parse(SyncSaveInSerializer, {k: v for k, v in data.items()
                                     if k not in ("items", "state", "memory", "last_results")})
        thread = self.get_object()
        syncspec.check_save(data)
        result = sync.sync_apply(
            thread=thread, actor=actor_of(request), namespace=data["namespace"],
            items=data.get("items"), removed=data.get("removed"),
            base_revision=data.get("base_revision"), upload_id=data.get("upload_id"),
            part=data.get("part", 0), parts=data.get("parts", 1),
            state=data.get("state", UNSET), memory=data.get("memory", UNSET),
            summary=data.get("summary", UNSET), document=data.get("document", UNSET),
            last_results=data.get("last_results", UNSET),
        )
        code = status.HTTP_202_ACCEPTED if result["status"] == "staged" else status.HTTP_200_OK
        return Response(result, status=code)
