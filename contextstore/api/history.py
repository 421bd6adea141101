"""ThreadViewSet's history actions: collapse, window, fork, tokens, export and import
(events and context stay in api/views.py)."""

from django.http import HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadResponses, actor_of, body, note_read, parse, token_of
from contextstore.api.exports import IMPORT_DOCUMENT
from contextstore.api.renderers import ORJSONRenderer
from contextstore.errors import InvalidInput
from contextstore.jsonstream import json_object_chunks
from contextstore.models import Collapse, ReadAudit
from contextstore.selectors.windows import total_tokens, window_by_count, window_by_tokens
from contextstore.services import (
    collapses,
    peteos,
    summaries,
    threads,
    transfer,
)


class ThreadHistoryActions(ThreadResponses):
    # /threads/{id}/collapse|window|fork|tokens|export/ and /threads/import/.
    # (no docstring: drf-spectacular would copy it into every operation description)

    # -- collapse

    @extend_schema(request=s.CollapseInSerializer,
                   responses={201: s.CollapseSerializer, 202: s.JobAcceptedSerializer},
                   summary="Collapse positions [start_position, end_position] into a summary "
                           "(or queue a summarizer)",
                   description="Both ends are working-context positions and both are included.")
    @action(detail=True, methods=["post"])
    def collapse(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        data = parse(s.CollapseInSerializer, body(request))
        if data["summarize"]:
            job = summaries.summarize_range_request(
                thread=thread, start_position=data["start_position"],
                end_position=data["end_position"], actor=actor_of(request), widen=data["widen"])
            return Response({"job_id": str(job.pk)}, status=status.HTTP_202_ACCEPTED)
        collapse = collapses.collapse_create(
            thread=thread, start_position=data["start_position"], end_position=data["end_position"],
            summary_text=data["summary_text"], actor=actor_of(request),
            source=Collapse.Source.AGENT, widen=data["widen"])
        return Response(s.CollapseSerializer(collapse).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[OpenApiParameter(
        "window", s.WindowQuerySerializer, OpenApiParameter.QUERY, required=True, style="form",
        explode=True, description="count (newest N) or max_tokens (newest within the budget): "
                                  "one of them, as plain query parameters.")],
                   responses=s.WindowSerializer)
    @action(detail=True, methods=["get"])
    def window(self, request: Request, pk: str) -> Response:
        query = parse(s.WindowQuerySerializer, request.query_params)
        thread = self.get_object()
        if "count" in query:
            window = window_by_count(thread=thread, count=query["count"])
        else:
            window = window_by_tokens(thread=thread, max_tokens=query["max_tokens"])
        return Response({"events": s.EventSerializer(window["events"], many=True).data,
                         "covers_all": window["covers_all"]})

    @extend_schema(request=s.ForkInSerializer, responses={201: s.ThreadSerializer},
                   summary="Fork the working context of positions [start_position, end_position]",
                   description="Copies exactly that working context, summaries with their "
                               "collapses (still undoable in the fork). Undo: DELETE the fork.")
    @action(detail=True, methods=["post"])
    def fork(self, request: Request, pk: str) -> Response:
        data = parse(s.ForkInSerializer, body(request))
        thread = self.get_object()
        # Positions never pass the newest seq, so a bound beyond it is outside the thread.
        for label in ("start_position", "end_position"):
            if data.get(label) is not None and data[label] > thread.last_seq:
                raise InvalidInput(f"{label} is past the end of the thread (last position "
                                   f"{thread.last_seq}).", details={label: "outside the thread"})
        child = threads.thread_fork(thread=thread, actor=actor_of(request), **data)
        return self.thread_response(child, status.HTTP_201_CREATED)

    @extend_schema(responses=s.TokensSerializer)
    @action(detail=True, methods=["get"])
    def tokens(self, request: Request, pk: str) -> Response:
        return Response({"total_tokens": total_tokens(thread=self.get_object())})

    @extend_schema(parameters=[s.ExportQuerySerializer], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str) -> HttpResponseBase:
        query = parse(s.ExportQuerySerializer, request.query_params)
        thread = self.get_object()
        if query["format"] == "peteos":
            document = peteos.thread_to_peteos(thread=thread)
            note_read(request, ReadAudit.Action.EXPORT, thread)
            return Response(document)
        # Streamed a few hundred events at a time; the bytes are those the renderer wrote for
        # the whole dict (ORJSONRenderer renders each part as it would inside the whole).
        head, events = transfer.thread_export_parts(thread=thread)
        render = ORJSONRenderer().render
        response = StreamingHttpResponse(json_object_chunks(head, "events", events, dumps=render),
                                         content_type="application/json")
        response["X-Event-Count"] = str(thread.event_count)
        note_read(request, ReadAudit.Action.EXPORT, thread)
        return response

    @extend_schema(request=IMPORT_DOCUMENT, parameters=[s.ImportQuerySerializer],
                   responses={201: s.ThreadSerializer},
                   description="Body: a contextstore export (what export/ answers) or a peteos "
                               "context JSON.")
    @action(detail=False, methods=["post"], url_path="import")
    def import_(self, request: Request) -> Response:
        query = parse(s.ImportQuerySerializer, request.query_params)
        thread = transfer.thread_import(workspace=token_of(request).workspace, data=body(request),
                                        actor=actor_of(request), **query)
        return self.thread_response(thread, status.HTTP_201_CREATED)
