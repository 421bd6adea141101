"""A thread's context, GET /api/v1/threads/{id}/context/, and what a logged model call was sent,
GET /api/v1/threads/{id}/llm-calls/{seq}/ (ThreadRenderViewSet). Render records:
GET /api/v1/renders/{id}/ rebuilds the exact messages a past render gave;
GET /api/v1/renders/{a}/diff/{b}/ says what changed between two. Records are made by
GET /api/v1/threads/{id}/context/?record=true (the Python client's context() does it)."""

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadSubjectViewSet, actor_of, note_read, parse, token_of
from contextstore.errors import NotFound
from contextstore.eventspec import LLM_CALL_TYPES
from contextstore.llm_models import thread_model_settings
from contextstore.models import Event, ReadAudit, RenderRecord
from contextstore.selectors import rendering, renders
from contextstore.selectors.cache import records_compare
from contextstore.selectors.calls import LLMCall, llm_call_at, llm_call_reply
from contextstore.services.renders import context_render_recorded

UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


class RenderSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    thread = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    actor = serializers.CharField()
    format = serializers.CharField()
    max_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    prefix_hash = serializers.CharField()
    thread_revision = serializers.IntegerField()
    options = serializers.DictField()
    fits = serializers.BooleanField()
    system = serializers.ListField(child=serializers.DictField(), required=False)
    messages = serializers.ListField(child=serializers.DictField())
    expired_events = serializers.IntegerField(
        help_text="events the render named that retention has deleted since: the rebuild leaves "
                  "them out, so it is no longer what the agent received when this is above 0")


class RenderDiffSerializer(serializers.Serializer):
    a = serializers.UUIDField()
    b = serializers.UUIDField()
    events_added = serializers.DictField()
    events_removed = serializers.DictField()
    blocks_changed = serializers.ListField(child=serializers.DictField())
    summary_changed = serializers.BooleanField()
    prefix_changed = serializers.BooleanField()
    prompt_cache_lost = serializers.BooleanField(
        help_text="b does not begin with what a provider cached of a (everything before a's history "
                  "end): tools, system and messages compared in the format's wire order")
    prompt_cache = serializers.DictField(
        help_text="reusable and total input tokens (cl100k_base), the provider's minimum cacheable "
                  "prefix, status (kept, partial, lost, short), cause and the first difference")
    format_changed = serializers.BooleanField()
    tokens = serializers.DictField()


def render_out(record: RenderRecord) -> dict[str, Any]:
    return {
        "id": str(record.pk), "thread": record.thread_id, "created_at": record.created_at,
        "actor": record.actor, "format": record.format, "max_tokens": record.max_tokens,
        "total_tokens": record.total_tokens, "prefix_hash": record.prefix_hash,
        "thread_revision": record.thread_revision, "options": record.spec["options"],
        "fits": record.spec["fits"], **renders.render_rebuild(record=record),
        "expired_events": renders.render_expired(record),
    }


@extend_schema(tags=["renders"])
class RenderViewSet(viewsets.GenericViewSet):
    lookup_value_regex = UUID
    serializer_class = RenderSerializer

    def _get(self, pk: str) -> RenderRecord:
        return renders.render_get(workspace_id=token_of(self.request).workspace_id, render_id=pk)

    @extend_schema(responses=RenderSerializer,
                   summary="Rebuild the messages a recorded render gave, byte for byte")
    def retrieve(self, request: Request, pk: str) -> Response:
        record = self._get(pk)
        out = render_out(record)
        note_read(request, ReadAudit.Action.RENDER_READ, record.thread, target=record)
        return Response(out)

    @extend_schema(responses=RenderDiffSerializer, summary="What changed between two renders")
    @action(detail=True, methods=["get"], url_path=rf"diff/(?P<other>{UUID})")
    def diff(self, request: Request, pk: str, other: str) -> Response:
        a, b = self._get(pk), self._get(other)
        cache = records_compare(a=a, b=b)
        lost = cache["cause"] not in ("append", "suffix_moves")
        return Response({**renders.render_diff(a=a, b=b), "prompt_cache_lost": lost,
                         "prompt_cache": {**cache, "lost_cost": str(cache["lost_cost"]), "reported": None}})


class LLMCallSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    type = serializers.CharField()
    render_id = serializers.UUIDField(allow_null=True)
    format = serializers.CharField(allow_null=True)
    system = serializers.ListField(child=serializers.DictField(), required=False)
    messages = serializers.ListField(child=serializers.JSONField(), allow_null=True)
    messages_expired = serializers.IntegerField(
        help_text="How many logged messages are gone (their text erased) and left out of `messages`.")
    tools = serializers.ListField(child=serializers.DictField(), allow_null=True)
    params = serializers.DictField()
    reply = serializers.DictField(
        allow_null=True, help_text="What the call answered, as one assistant message (`role`, `content`, "
        "`tool_calls` when it made any), however it was logged: an LLMOutput, an assistant Message, "
        "ToolCalls, the LLMComplete's content, or an OTLP span's output messages. "
        "Null when nothing was logged.")


@extend_schema(tags=["threads"])
class ThreadRenderViewSet(ThreadSubjectViewSet):
    # /threads/{id}/context/ (a render, recorded on request) and /threads/{id}/llm-calls/{seq}/.
    # (no docstring: drf-spectacular would copy it into every operation description)

    @extend_schema(parameters=[s.ContextQuerySerializer], responses=s.ContextSerializer)
    @action(detail=True, methods=["get"])
    def context(self, request: Request, pk: str) -> Response:
        query = parse(s.ContextQuerySerializer, request.query_params)
        # the session only for its model settings, which an explicit max_tokens overrides
        thread = self.get_object(with_session=not query.get("max_tokens"))
        if query["record"] and not token_of(request).can_write:
            raise PermissionDenied("Recording a render needs a token with write scope.")
        max_tokens = query.get("max_tokens") or thread_model_settings(thread).budget
        options = {"thread": thread, "max_tokens": max_tokens, "strip_thinking": query["strip_thinking"],
                   "fmt": query["format"], "on_oversize": query["on_oversize"],
                   "start_chunk": query.get("start_chunk"),
                   "tools": renders.render_tools(workspace_id=thread.workspace_id,
                                                 tools_hash=query.get("tools_hash"))}
        if not query["record"]:
            response = Response(rendering.render(**options).body)
        else:
            rendered, record = context_render_recorded(**options, actor=actor_of(request))
            response = Response({**rendered.body, "render_id": str(record.pk)})
        note_read(request, ReadAudit.Action.CONTEXT_READ, thread)
        return response

    @extend_schema(responses=LLMCallSerializer, summary="What a logged LLM call was sent", tags=["renders"],
                   description="GET /api/v1/threads/{id}/llm-calls/{seq}/: what a logged model call "
                               "was sent — its\nrender rebuilt, or the messages the agent logged "
                               "with it, and the tools and params it\nlogged.")
    @action(detail=True, methods=["get"], url_path=r"llm-calls/(?P<seq>[0-9]+)")
    def llm_call(self, request: Request, pk: str, seq: str) -> Response:
        thread = self.get_object()
        event = Event.objects.filter(thread=thread, seq=int(seq),
                                     type__in=LLM_CALL_TYPES).first()
        if event is None:
            raise NotFound(f"No LLM call event at seq {seq} on this thread.")
        data = event.data if isinstance(event.data, dict) else {}
        messages, gone = renders.llm_call_logged(event=event, workspace_id=thread.workspace_id)
        out: dict[str, Any] = {"seq": event.seq, "type": event.type,
                               "render_id": data.get("render_id"), "format": None,
                               "messages": messages, "messages_expired": gone,
                               **renders.llm_call_request(event=event, workspace_id=thread.workspace_id)}
        if out["render_id"]:
            record = renders.render_get(workspace_id=thread.workspace_id, render_id=out["render_id"])
            out.update(renders.render_rebuild(record=record))
        call = llm_call_at(thread=thread, seq=event.seq) or LLMCall(start=None, end=event)
        out["reply"] = llm_call_reply(thread=thread, call=call).as_message()
        note_read(request, ReadAudit.Action.CALL_SENT, thread)
        return Response(out)
