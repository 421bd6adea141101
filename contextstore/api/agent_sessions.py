"""Framework sessions API (/api/v1/agent-sessions/): one request per framework call.

Sessions are addressed by identity (app, user_id, key, thread) rather than by id, so an
adapter never needs a lookup before it reads or writes. Thin: parse, call one service in
services/agent_sessions.py, serialize.
"""

import base64
import binascii
import json
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from contextstore.api.common import actor_of, body, if_match_revision, parse, token_of
from contextstore.api.schema import NO_NUL, ObjectListSchema
from contextstore.api.serializers import (
    EVENT_ROW_VALUES,
    JSON_ANY,
    EventInSerializer,
    EventSerializer,
    JSONObject,
    _iso,
    event_rows,
)
from contextstore.errors import InvalidInput
from contextstore.models import ScopedState, Session, Thread
from contextstore.selectors import agent_sessions as reads
from contextstore.selectors.agent_sessions import MAX_BLOBS_PER_COMMIT, Identity
from contextstore.services import agent_sessions as svc
from contextstore.services.agent_sessions import BlobIn, CommitIn

# ------------------------------------------------------------------------- serializers


class IdentitySerializer(serializers.Serializer):
    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, allow_blank=True, default="", trim_whitespace=False)
    key = serializers.CharField(max_length=255, trim_whitespace=False)
    thread = serializers.CharField(max_length=200, default="main", trim_whitespace=False)


class ReadQuerySerializer(IdentitySerializer):
    limit = serializers.IntegerField(min_value=0, max_value=10000, required=False,
                                     help_text="Newest N history events (default all).")
    after = serializers.DateTimeField(required=False, help_text="Only events that occurred at or after.")
    type = serializers.ListField(child=serializers.CharField(max_length=32), required=False)
    client_id = serializers.CharField(max_length=200, required=False)
    data_contains = serializers.CharField(required=False,
                                          help_text="A JSON object every returned event's data contains.")
    blob = serializers.ListField(child=serializers.CharField(max_length=500), required=False,
                                 help_text="Blob keys to return with the read.")
    blob_prefix = serializers.ListField(child=serializers.CharField(max_length=500), required=False,
                                        help_text="Return the blobs whose keys start so too.")
    event_blobs = serializers.BooleanField(
        required=False, default=False,
        help_text="Return too the blobs the returned events name: each event's data.blob_refs, "
                  '{"keys": [...], "prefixes": [...]}.')
    before_client_id = serializers.CharField(max_length=200, required=False,
                                             help_text="Only events older than the one with this client id.")
    fields = serializers.CharField(  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
        max_length=300, required=False, validators=[RegexValidator(  # the schema's pattern too
            "^({0})(,({0}))*$".format("|".join(EVENT_ROW_VALUES)),
            f"Event fields are some of {', '.join(EVENT_ROW_VALUES)}, comma-separated.")],
        help_text=f"The event fields to return, comma-separated (default all): "
                  f"{', '.join(EVENT_ROW_VALUES)}.")

    def validate_fields(self, value: str) -> list[str]:
        names = value.split(",")
        unknown = [name for name in names if name not in EVENT_ROW_VALUES]
        if unknown:
            raise serializers.ValidationError(f"Unknown event fields: {', '.join(unknown)}.")
        return list(dict.fromkeys(names))


class Base64Text(serializers.CharField):
    """Base64 text, decoded (validate=True) where it is used, which refuses every character
    outside the alphabet. So DRF's surrogate check, a Python loop over every character (an
    eighth of a LangGraph commit's CPU), is left off; the JSON parser refuses lone surrogates
    anyway (api.parsers)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [v for v in self.validators
                           if not isinstance(v, ProhibitSurrogateCharactersValidator)]


class BlobInSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=500, trim_whitespace=False)
    data = Base64Text(help_text="Base64 bytes.", trim_whitespace=False, allow_blank=True)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
    schema_rules = {"properties": {"data": {"format": "byte"}}}
    content_type = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    meta = JSON_ANY(required=False, allow_null=True, default=None)


class BlobSerializer(serializers.Serializer):
    key = serializers.CharField()
    data = serializers.CharField(help_text="Base64 bytes.")  # type: ignore[assignment]  # a field (the metaclass takes it off the class)
    content_type = serializers.CharField()
    meta = JSON_ANY(allow_null=True)
    size = serializers.IntegerField()

    def to_representation(self, blob: dict[str, Any]) -> dict[str, Any]:
        """A row of selectors.agent_sessions.BLOB_ROW_FIELDS."""
        return {"key": blob["key"], "data": svc.b64(blob["data"]), "content_type": blob["content_type"],
                "meta": blob["meta"], "size": blob["size"]}


class CreateSerializer(IdentitySerializer):
    state = JSONObject(required=False, allow_null=True, default=None)
    app_state = JSONObject(required=False, allow_null=True, default=None)
    user_state = JSONObject(required=False, allow_null=True, default=None)
    agent = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    title = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    metadata = JSONObject(required=False, allow_null=True, default=None)


class CommitSerializer(IdentitySerializer):
    # The blobs' count and each one's decoded size are checked by the view (_blobs).
    events = EventInSerializer(many=True, required=False)
    state = JSONObject(required=False, allow_null=True, default=None, help_text="Merge patch (RFC 7386).")
    app_state = JSONObject(required=False, allow_null=True, default=None)
    user_state = JSONObject(required=False, allow_null=True, default=None)
    blobs = BlobInSerializer(many=True, required=False)
    expected_last_seq = serializers.IntegerField(required=False, allow_null=True, default=None)
    batch_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    create = serializers.BooleanField(required=False, default=False)  # type: ignore[assignment]  # a field (the metaclass takes it off the class)


class CommitEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    seq = serializers.IntegerField()
    client_id = serializers.CharField(allow_null=True)
    occurred_at = serializers.DateTimeField()


class CommitResultSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    thread = serializers.IntegerField()
    revision = serializers.IntegerField()
    last_seq = serializers.IntegerField()
    events = CommitEventSerializer(many=True)
    app_revision = serializers.IntegerField()
    user_revision = serializers.IntegerField()


class AgentSessionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    app = serializers.CharField()
    user_id = serializers.CharField()
    key = serializers.CharField()
    agent = serializers.CharField()
    title = serializers.CharField()
    metadata = JSON_ANY()
    created_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    thread = serializers.IntegerField(allow_null=True)
    state = JSON_ANY()
    revision = serializers.IntegerField()
    last_seq = serializers.IntegerField()


def _session(session: Session, thread: Thread | None) -> dict[str, Any]:
    return {
        "id": session.pk, "app": session.app, "user_id": session.user_id, "key": session.key,
        "agent": session.agent, "title": session.title, "metadata": session.metadata,
        "created_at": _iso(session.created_at), "last_activity_at": _iso(session.last_activity_at),
        "thread": thread.pk if thread else None, "state": thread.state if thread else {},
        "revision": thread.revision if thread else 0, "last_seq": thread.last_seq if thread else 0,
    }


class SessionEventSerializer(EventSerializer):
    """An event of a session read: the fields the read's `fields` names, all by default."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for field in fields.values():
            field.required = False
        return fields


class SessionReadSerializer(AgentSessionSerializer):
    app_state = JSON_ANY()
    app_revision = serializers.IntegerField()
    user_state = JSON_ANY()
    user_revision = serializers.IntegerField()
    events = SessionEventSerializer(many=True)
    blobs = BlobSerializer(many=True)


def _read(read: reads.SessionRead, fields: list[str] | None = None) -> dict[str, Any]:
    app, user = read.scopes["app"], read.scopes["user"]
    return {
        **_session(read.session, read.thread),
        "app_state": app.state if app else {}, "app_revision": app.revision if app else 0,
        "user_state": user.state if user else {}, "user_revision": user.revision if user else 0,
        "events": event_rows(read.events, read.columns, fields),
        "blobs": [BlobSerializer().to_representation(blob) for blob in read.blobs],
    }


class ListQuerySerializer(serializers.Serializer):
    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, required=False, allow_blank=True, trim_whitespace=False)
    thread = serializers.CharField(max_length=200, default="main")
    cursor = serializers.CharField(max_length=200, required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, default=50)


class SessionPageSerializer(serializers.Serializer):
    results = AgentSessionSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    app_state = JSON_ANY(help_text="The app scope's state.")
    user_states = serializers.DictField(child=JSON_ANY(), help_text="User scopes of the page's users.")


class RetractedSerializer(serializers.Serializer):
    event = EventSerializer(allow_null=True)


class DeleteSerializer(serializers.Serializer):
    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, allow_blank=True, default="", trim_whitespace=False)
    key = serializers.CharField(max_length=255, required=False, trim_whitespace=False)
    key_prefix = serializers.CharField(max_length=255, required=False, trim_whitespace=False,
                                       help_text="Delete every session of the app whose key starts so.")

    schema_rules = {"description": "key (one session) or key_prefix (every session of the app "
                                   "whose key starts so; it wins when both are given).",
                    "anyOf": [{"required": ["key"]}, {"required": ["key_prefix"]}]}


class CopySerializer(serializers.Serializer):
    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, allow_blank=True, default="", trim_whitespace=False)
    key = serializers.CharField(max_length=255, trim_whitespace=False, help_text="The source session.")
    target_key = serializers.CharField(max_length=255, trim_whitespace=False,
                                       help_text="The new session's key (it must not exist).")


class CopiedSerializer(serializers.Serializer):
    copied = serializers.IntegerField(help_text="Events copied.")


class RemoveSerializer(serializers.Serializer):
    schema_rules = {
        "description": "keys or run_ids (one of them); keep_latest only with keys. Each blob "
                       "prefix names {client_id} once.",
        "oneOf": [{"required": ["keys"]}, {"required": ["run_ids"]}],
        "not": {"required": ["run_ids", "keep_latest"],
                "properties": {"keep_latest": {"allOf": [{"enum": [True]}]}}},
        # Unanchored patterns: schemathesis 4.32 cannot generate from an anchored one holding
        # "{client_id}" beside a maxLength (it folds the length into the pattern).
        "properties": {"blob_prefixes": {"items": {
            "type": "string", "maxLength": 500, "pattern": NO_NUL,
            "allOf": [{"pattern": "[{]client_id[}]"},
                      {"not": {"pattern": "[{]client_id[}][\\s\\S]*[{]client_id[}]"}}]}}},
    }

    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    user_id = serializers.CharField(max_length=255, allow_blank=True, default="", trim_whitespace=False)
    keys = serializers.ListField(child=serializers.CharField(max_length=255, trim_whitespace=False),
                                 max_length=500, required=False,
                                 help_text="Sessions whose events leave (give keys or run_ids).")
    run_ids = serializers.ListField(child=serializers.CharField(max_length=200, trim_whitespace=False),
                                    max_length=500, required=False,
                                    help_text="Runs whose events leave, in every session of the app.")
    type = serializers.ListField(child=serializers.CharField(max_length=64), max_length=50,
                                 required=False, help_text="Only events of these types.")
    keep_latest = serializers.BooleanField(default=False,
                                           help_text="With keys: keep each thread's newest event.")
    blob_prefixes = serializers.ListField(
        child=serializers.CharField(max_length=500, trim_whitespace=False), max_length=10, default=list,
        help_text="Blobs deleted with each event: key prefixes holding {client_id} once.")

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        # The rules between fields (schema_rules above), in the words the API has always used.
        if ("keys" in data) == ("run_ids" in data):
            raise InvalidInput("Give keys or run_ids (one of them).", details={"keys": "keys or run_ids"})
        if "run_ids" in data and data["keep_latest"]:
            raise InvalidInput("keep_latest goes with keys, not run_ids.",
                               details={"keep_latest": "with keys"})
        for template in data["blob_prefixes"]:
            if template.count(svc.CLIENT_ID) != 1:
                raise InvalidInput("Each blob prefix names the event's client id once: {client_id}.",
                                   details={"blob_prefixes": template})
        return data


class RemovedSerializer(serializers.Serializer):
    removed = serializers.IntegerField(help_text="Events that left the history (kept for audit).")


class ScopePatchSerializer(serializers.Serializer):
    app = serializers.CharField(max_length=200, allow_blank=True, default="", trim_whitespace=False)
    scope = serializers.ChoiceField(choices=ScopedState.Scope.choices)
    user_id = serializers.CharField(max_length=255, allow_blank=True, default="", trim_whitespace=False)
    patch = JSONObject(object_name="state")  # a patch of the scope's state


class ScopesSerializer(serializers.Serializer):
    app_state = JSON_ANY()
    app_revision = serializers.IntegerField()
    user_state = JSON_ANY()
    user_revision = serializers.IntegerField()


def _identity(data: dict[str, Any]) -> Identity:
    return Identity(app=data["app"], user_id=data["user_id"], key=data["key"], thread=data["thread"])


def _blobs(raw: list[dict[str, Any]]) -> list[BlobIn]:
    """A commit's blobs decoded: at most MAX_BLOBS_PER_COMMIT, each within MAX_BLOB_BYTES."""
    if len(raw) > MAX_BLOBS_PER_COMMIT:
        raise InvalidInput(f"At most {MAX_BLOBS_PER_COMMIT} blobs per commit.", details={"blobs": "too many"})
    out = []
    for i, blob in enumerate(raw):
        try:
            data = base64.b64decode(blob["data"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput(f"blobs[{i}].data is not base64.",
                               details={f"blobs[{i}].data": "base64"}) from exc
        if len(data) > svc.MAX_BLOB_BYTES:
            raise InvalidInput(f"A blob is at most {svc.MAX_BLOB_BYTES} bytes.",
                               details={"blobs": blob["key"]})
        out.append(BlobIn(key=blob["key"], data=data, content_type=blob["content_type"], meta=blob["meta"]))
    return out


LIST_PARAMS = ("type", "blob", "blob_prefix")  # the read's repeated query parameters

IF_MATCH = OpenApiParameter("If-Match", str, OpenApiParameter.HEADER,
                            description="The thread state's revision the commit is based on.")


# ------------------------------------------------------------------------------ views

@extend_schema(tags=["agent sessions"])
class AgentSessionViewSet(viewsets.ViewSet):
    """Framework sessions (ADK, LangGraph, OpenAI Agents SDK) addressed by identity."""

    schema = ObjectListSchema()

    @extend_schema(parameters=[ListQuerySerializer], responses=SessionPageSerializer,
                   summary="List sessions of an app (and user) with state, newest activity first")
    def list(self, request: Request) -> Response:
        query = parse(ListQuerySerializer, request.query_params)
        rows, cursor = reads.sessions_list(workspace=token_of(request).workspace, **query)
        app_state, user_states = reads.scopes_for_users(
            workspace=token_of(request).workspace, app=query["app"], user_ids={s.user_id for s, _ in rows})
        return Response({"results": [_session(s, t) for s, t in rows], "next_cursor": cursor,
                         "app_state": app_state, "user_states": user_states})

    @extend_schema(request=CreateSerializer,
                   responses={201: SessionReadSerializer, 409: OpenApiResponse(description="Exists.")},
                   summary="Create a session (create-only) with its first thread and initial state")
    def create(self, request: Request) -> Response:
        data = parse(CreateSerializer, body(request))
        read = svc.session_create(
            workspace=token_of(request).workspace, identity=_identity(data), actor=actor_of(request),
            state=data["state"], app_state=data["app_state"], user_state=data["user_state"],
            agent=data["agent"], title=data["title"], metadata=data["metadata"])
        return Response(_read(read), status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[ReadQuerySerializer], responses=SessionReadSerializer,
                   summary="Read a session in one request: state, scopes, newest events, blobs")
    @action(detail=False, methods=["get"])
    def read(self, request: Request) -> Response:
        query = request.query_params.copy()
        data = parse(ReadQuerySerializer, {
            **{k: query.get(k) for k in query if k not in LIST_PARAMS},
            **{k: query.getlist(k) for k in LIST_PARAMS if k in query},
        })
        contains = None
        if "data_contains" in data:
            try:
                contains = json.loads(data["data_contains"])
            except ValueError as exc:
                raise InvalidInput("data_contains must be JSON.", details={"data_contains": "JSON"}) from exc
        read = reads.session_read(
            workspace=token_of(request).workspace, identity=_identity(data), limit=data.get("limit"),
            after=data.get("after"), types=data.get("type"), client_id=data.get("client_id"),
            data_contains=contains, blob_keys=data.get("blob"), before_client_id=data.get("before_client_id"),
            blob_prefixes=data.get("blob_prefix"), event_blobs=data["event_blobs"],
            columns=[EVENT_ROW_VALUES[f][0] for f in data.get("fields") or EVENT_ROW_VALUES])
        return Response(_read(read, data.get("fields")))

    @extend_schema(request=CommitSerializer, parameters=[IF_MATCH], responses=CommitResultSerializer,
                   summary="Atomic conditional append: events, state patches and blobs in one transaction")
    @action(detail=False, methods=["post"])
    def commit(self, request: Request) -> Response:
        raw = body(request)
        # The events as sent: the service checks them as every endpoint that takes events does
        # (eventspec), naming each refusal's place (events[0].type).
        data = parse(CommitSerializer, {k: v for k, v in raw.items() if k != "events"})
        commit = CommitIn(
            events=raw.get("events", []), state=data["state"], app_state=data["app_state"],
            user_state=data["user_state"], blobs=_blobs(data.get("blobs") or []),
            expected_revision=if_match_revision(request), expected_last_seq=data["expected_last_seq"],
            batch_id=data["batch_id"], create=data["create"])
        result = svc.session_commit(workspace=token_of(request).workspace, identity=_identity(data),
                                    commit=commit, actor=actor_of(request))
        return Response(result, headers={"ETag": f'"{result["revision"]}"'})

    @extend_schema(request=IdentitySerializer, responses=RetractedSerializer,
                   summary="Retract the newest event (kept for audit) and return it")
    @action(detail=False, methods=["post"])
    def retract(self, request: Request) -> Response:
        data = parse(IdentitySerializer, body(request))
        event = svc.retract_newest(workspace=token_of(request).workspace, identity=_identity(data),
                                   actor=actor_of(request))
        return Response({"event": EventSerializer(event).data if event else None})

    @extend_schema(request=IdentitySerializer,
                   responses=OpenApiTypes.OBJECT,
                   summary="Clear the session's history (kept for audit)")
    @action(detail=False, methods=["post"])
    def clear(self, request: Request) -> Response:
        data = parse(IdentitySerializer, body(request))
        cleared = svc.history_clear(workspace=token_of(request).workspace, identity=_identity(data),
                                    actor=actor_of(request))
        return Response({"cleared": cleared})

    @extend_schema(request=DeleteSerializer, responses=OpenApiTypes.OBJECT,
                   summary="Delete a session by identity, or all of an app's sessions with a key prefix")
    # Not named `delete`: APIView.dispatch would answer an HTTP DELETE on every route of this
    # ViewSet (read/, clear/, ...) with it.
    @action(detail=False, methods=["post"], url_path="delete", url_name="delete")
    def delete_sessions(self, request: Request) -> Response:
        data = parse(DeleteSerializer, body(request))
        workspace, actor = token_of(request).workspace, actor_of(request)
        if "key_prefix" in data:
            removed = svc.sessions_remove_by_prefix(workspace=workspace, app=data["app"],
                                                    key_prefix=data["key_prefix"], actor=actor)
        elif "key" in data:
            identity = Identity(app=data["app"], user_id=data["user_id"], key=data["key"])
            removed = int(svc.session_remove(workspace=workspace, identity=identity, actor=actor))
        else:
            raise InvalidInput("key or key_prefix is required.", details={"key": "required"})
        return Response({"deleted": removed})

    @extend_schema(request=CopySerializer,
                   responses={200: CopiedSerializer, 404: OpenApiResponse(description="No source."),
                              409: OpenApiResponse(description="The target exists.")},
                   summary="Copy a session, every thread's history, state and blobs, to a new key")
    @action(detail=False, methods=["post"])
    def copy(self, request: Request) -> Response:
        data = parse(CopySerializer, body(request))
        copied = svc.session_copy(
            workspace=token_of(request).workspace, actor=actor_of(request),
            identity=Identity(app=data["app"], user_id=data["user_id"], key=data["key"]),
            target_key=data["target_key"])
        return Response({"copied": copied})

    @extend_schema(request=RemoveSerializer, responses=RemovedSerializer,
                   summary="Take events (and their blobs) out of sessions' history, by session or run")
    @action(detail=False, methods=["post"])
    def remove(self, request: Request) -> Response:
        data = parse(RemoveSerializer, body(request))
        remove = svc.RemoveIn(keys=data.get("keys"), run_ids=data.get("run_ids"),
                              types=data.get("type"), keep_latest=data["keep_latest"],
                              blob_prefixes=data["blob_prefixes"])
        removed = svc.history_remove(workspace=token_of(request).workspace, app=data["app"],
                                     user_id=data["user_id"], remove=remove, actor=actor_of(request))
        return Response({"removed": removed})

    @extend_schema(parameters=[IdentitySerializer,
                               OpenApiParameter("blob", str, many=True, description="blob keys"),
                               OpenApiParameter("prefix", str, many=True, description="key prefixes")],
                   responses=BlobSerializer(many=True), summary="Get several blobs of a thread at once")
    @action(detail=False, methods=["get"])
    def blobs(self, request: Request) -> Response:
        query = request.query_params
        data = parse(IdentitySerializer, {k: query.get(k) for k in ("app", "user_id", "key", "thread")
                                          if k in query})
        blobs = reads.blobs_get(workspace=token_of(request).workspace, identity=_identity(data),
                              keys=query.getlist("blob"), prefixes=query.getlist("prefix"))
        return Response([BlobSerializer().to_representation(blob) for blob in blobs])

    @extend_schema(methods=["get"], parameters=[
        OpenApiParameter("app", str), OpenApiParameter("user_id", str)], responses=ScopesSerializer,
        summary="The app- and user-scoped states")
    @extend_schema(methods=["patch"], request=ScopePatchSerializer, responses=ScopesSerializer,
                   summary="Merge-patch the app scope or a user scope")
    @action(detail=False, methods=["get", "patch"])
    def scopes(self, request: Request) -> Response:
        workspace = token_of(request).workspace
        if request.method == "PATCH":
            data = parse(ScopePatchSerializer, body(request))
            svc.scoped_state_patch(workspace=workspace, app=data["app"], scope=data["scope"],
                                   user_id=data["user_id"], patch=data["patch"], actor=actor_of(request))
            app, user_id = data["app"], data["user_id"]
        else:
            app, user_id = request.query_params.get("app", ""), request.query_params.get("user_id", "")
        scopes = reads.scoped_states(workspace=workspace, app=app, user_id=user_id)
        a, u = scopes["app"], scopes["user"]
        return Response({"app_state": a.state if a else {}, "app_revision": a.revision if a else 0,
                         "user_state": u.state if u else {}, "user_revision": u.revision if u else 0})
