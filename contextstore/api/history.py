"""A thread's history: its events (query, append), collapse, window, fork, tokens, export and
import, under /api/v1/threads/{id}/ (the thread itself is api/threads.py)."""

from django.http import Http404, HttpResponseBase, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import (
    ThreadSubjectViewSet,
    actor_of,
    body,
    note_read,
    parse,
    token_of,
)
from contextstore.api.exports import IMPORT_DOCUMENT
from contextstore.api.pagination import next_link, page
from contextstore.api.renderers import ORJSONRenderer
from contextstore.collapsespec import check_collapse
from contextstore.errors import DomainError, InvalidInput
from contextstore.jsonstream import json_object_chunks
from contextstore.models import Collapse, ReadAudit, Thread
from contextstore.selectors.events import event_search
from contextstore.selectors.peteos import thread_to_peteos
from contextstore.selectors.threads import BIGINT_MAX
from contextstore.selectors.windows import total_tokens, window_by_count, window_by_tokens
from contextstore.services import (
    collapses,
    events,
    summaries,
    threads,
    transfer,
)

EVENTS_PAGE_SIZE = 500


@extend_schema(tags=["threads"])
class ThreadHistoryViewSet(ThreadSubjectViewSet):
    # /threads/{id}/events|collapse|window|fork|tokens|export/ and /threads/import/.
    # (no docstring: drf-spectacular would copy it into every operation description)

    # -- events

    @extend_schema(methods=["GET"], parameters=[s.EventQuerySerializer],
                   responses=s.EventPageSerializer, summary="Query events (oldest first)")
    @extend_schema(methods=["POST"], request=s.EventBatchSerializer,
                   responses={201: s.AppendResultSerializer, 200: s.AppendResultSerializer},
                   summary="Append a batch of events (idempotent per client_id)")
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def events(self, request: Request, pk: str) -> Response:
        if request.method == "POST":
            return self._append(request, pk)
        thread = self.get_object()
        query = parse(s.EventQuerySerializer, request.query_params)
        page_size = query.pop("page_size", EVENTS_PAGE_SIZE)
        types = query.pop("type", [])
        filters = {k: v for k, v in query.items() if v not in (None, "")}
        if "q" in filters:
            filters["text"] = filters.pop("q")
        found = event_search(thread=thread, types=types or None,
                             first=page_size + 1, **filters)
        more = len(found) > page_size
        found = found[:page_size]
        note_read(request, ReadAudit.Action.EVENTS_READ, thread)
        return page(s.EventSerializer(found, many=True).data,
                    next_link(request, after_seq=found[-1].seq) if more else None)

    def _append(self, request: Request, pk: str) -> Response:
        # The thread is read once, by the append's row lock (by id and workspace): an append's
        # cost is its round trips. A request refused before that lock still answers 404 for a
        # thread this token can't see, as every other route on a thread does.
        thread_id = int(pk)
        if not 0 < thread_id <= BIGINT_MAX:
            raise Http404
        try:
            data = body(request)
            unknown = set(data) - {"events"}
            if unknown:
                raise ValidationError({sorted(unknown)[0]: "unknown field"})
            result = events.event_append(
                thread=Thread(pk=thread_id, workspace=token_of(request).workspace),
                events=data.get("events"), actor=actor_of(request))
        except Thread.DoesNotExist:
            raise Http404 from None
        except (APIException, DomainError):
            self.get_object()
            raise
        return Response(
            {"events": [{"seq": e.seq, "id": e.pk, "token_count": e.token_count,
                         "client_id": e.client_id} for e in result.events],
             "created": result.created},
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )

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
        check_collapse(data["start_position"], data["end_position"], data["summary_text"])
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
            document = thread_to_peteos(thread=thread)
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
