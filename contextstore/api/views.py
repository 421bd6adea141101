"""Agent API v1: thin views that parse, call one service, and serialize.

Every queryset is scoped to the token's workspace in get_queryset, so another workspace's
object is a 404. Writes need a write-scoped token (permissions.TokenScope).
"""

import re
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from contextstore import selectors
from contextstore.api import serializers as s
from contextstore.api.pagination import SearchResultsPagination
from contextstore.api.parsers import LimitedJSONParser, MergePatchParser
from contextstore.errors import InvalidInput, NotFound
from contextstore.llm_models import thread_model_settings
from contextstore.models import Collapse, Job, ProviderState, Run, Session, Thread
from contextstore.selectors import rendering
from contextstore.services import (
    blocks,
    clientai,
    collapses,
    document,
    events,
    memories,
    peteos,
    renders,
    runs,
    sessions,
    state,
    summaries,
    threads,
    transfer,
)
from contextstore.services.common import THREAD_STATE_FIELDS, UNSET, Actor

EVENTS_PAGE_SIZE = 500


def actor_of(request: Request) -> Actor:
    return Actor.for_token(request.auth, ip=request.META.get("REMOTE_ADDR"))


def parse(serializer_class: type[Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def body(request: Request) -> Any:
    """The JSON body, which must be an object for every endpoint that takes one."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["The body must be a JSON object."]})
    return data


def etag_of(thread: Thread) -> str:
    return f'"{thread.revision}"'


IF_MATCH = re.compile(r'(?:W/)?("?)([0-9]{1,18})\1')


def if_match_revision(request: Request) -> int | None:
    """The revision an If-Match header names: `"3"`, `3` or weak `W/"3"` (compared like a strong
    one: a revision is exact either way); `*` or no header means any revision. Anything else,
    e.g. non-ASCII digits such as `"²"` or a list of tags, is a 400."""
    header = request.headers.get("If-Match")
    if header is None or header.strip() == "*":
        return None
    match = IF_MATCH.fullmatch(header.strip())
    if match is None:
        raise InvalidInput('If-Match must be a revision ETag such as "3" (ASCII digits).',
                           details={"If-Match": "must be a revision ETag such as \"3\""})
    return int(match.group(2))


def page_url(request: Request, **params: Any) -> str:
    query = request.query_params.copy()
    for key, value in params.items():
        query[key] = str(value)
    return request.build_absolute_uri(request.path) + "?" + urlencode(query, doseq=True)


# ---------------------------------------------------------------------------- sessions

@extend_schema(tags=["sessions"])
class SessionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.SessionSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Session]:
        if self.action == "list":
            query = parse(s.SessionQuerySerializer, self.request.query_params)
            return selectors.workspace_sessions(workspace=self.request.auth.workspace, **query)
        return Session.objects.filter(workspace=self.request.auth.workspace)

    @extend_schema(parameters=[s.SessionQuerySerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=s.SessionUpsertSerializer,
                   responses={200: s.SessionSerializer, 201: s.SessionSerializer},
                   summary="Upsert a session by (user_id, key)")
    def create(self, request: Request) -> Response:
        data = parse(s.SessionUpsertSerializer, body(request))
        session, created = sessions.session_ensure(
            workspace=request.auth.workspace, actor=actor_of(request), **data)
        return Response(s.SessionSerializer(session).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(request=s.SessionPatchSerializer, responses=s.SessionSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        session = self.get_object()
        data = parse(s.SessionPatchSerializer, body(request))
        session = sessions.session_update(session=session, actor=actor_of(request), **data)
        return Response(s.SessionSerializer(session).data)

    @extend_schema(responses={204: None}, summary="Delete a session and all its history")
    def destroy(self, request: Request, pk: str) -> Response:
        sessions.session_delete(session=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=s.ThreadSerializer(many=True))
    @action(detail=True, methods=["get"], serializer_class=s.ThreadSerializer)
    def threads(self, request: Request, pk: str) -> Response:
        session = self.get_object()
        qs = selectors.session_threads(session=session).select_related("session")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(s.ThreadSerializer(page, many=True).data)


# ---------------------------------------------------------------------------- threads

@extend_schema(tags=["threads"])
class ThreadViewSet(mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = s.ThreadSerializer
    lookup_value_regex = "[0-9]+"
    parser_classes = [LimitedJSONParser, MergePatchParser]

    def get_queryset(self) -> QuerySet[Thread]:
        qs = Thread.objects.filter(workspace=self.request.auth.workspace).select_related("session")
        if self.action == "events":  # reading and appending history never touch the state
            qs = qs.defer(*THREAD_STATE_FIELDS)
        return qs

    @extend_schema(responses={204: None}, summary="Delete a forked thread (the inverse of fork)",
                   description="Only forks; the parent is untouched and keeps every original. "
                               "What the fork added after forking is deleted with it, for good "
                               "(the audit log records the deletion). Not a fork: 409 not_a_fork.")
    def destroy(self, request: Request, pk: str) -> Response:
        threads.thread_delete_fork(thread=self.get_object(), actor=actor_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def thread_response(self, thread: Thread, code: int = status.HTTP_200_OK) -> Response:
        thread = self.get_queryset().get(pk=thread.pk)
        return Response(s.ThreadSerializer(thread).data, status=code)

    def state_response(self, thread: Thread) -> Response:
        return Response(s.StateSerializer(thread).data, headers={"ETag": etag_of(thread)})

    @extend_schema(request=s.ThreadEnsureSerializer,
                   responses={200: s.ThreadSerializer, 201: s.ThreadSerializer},
                   summary="Create the session and thread as needed; return the thread")
    @action(detail=False, methods=["post"])
    def ensure(self, request: Request) -> Response:
        data = parse(s.ThreadEnsureSerializer, body(request))
        thread, created = sessions.thread_ensure_by_key(
            workspace=request.auth.workspace, actor=actor_of(request), **data)
        return self.thread_response(thread, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    # -- events

    @extend_schema(methods=["GET"], parameters=[s.EventQuerySerializer],
                   responses=s.EventPageSerializer, summary="Query events (oldest first)")
    @extend_schema(methods=["POST"], request=s.EventBatchSerializer,
                   responses={201: s.AppendResultSerializer, 200: s.AppendResultSerializer},
                   summary="Append a batch of events (idempotent per client_id)")
    @action(detail=True, methods=["get", "post"], pagination_class=None)
    def events(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        if request.method == "POST":
            return self._append(request, thread)
        query = parse(s.EventQuerySerializer, request.query_params)
        page_size = query.pop("page_size", EVENTS_PAGE_SIZE)
        types = [t for t in query.pop("type", "").split(",") if t.strip()]
        filters = {k: v for k, v in query.items() if v not in (None, "")}
        if "q" in filters:
            filters["text"] = filters.pop("q")
        found = events.event_search(thread=thread, types=[t.strip() for t in types] or None,
                                    first=page_size + 1, **filters)
        more = len(found) > page_size
        found = found[:page_size]
        next_url = page_url(request, after_seq=found[-1].seq) if more else None
        return Response({"results": s.EventSerializer(found, many=True).data, "next": next_url})

    def _append(self, request: Request, thread: Thread) -> Response:
        data = body(request)
        unknown = set(data) - {"events"}
        if unknown:
            raise ValidationError({sorted(unknown)[0]: "unknown field"})
        result = events.event_append(thread=thread, events=data.get("events"), actor=actor_of(request))
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
                   description="Both ends are working-context positions and both are included. "
                               "start_seq/end_seq are accepted for one more version (deprecated).")
    @action(detail=True, methods=["post"])
    def collapse(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        data = parse(s.CollapseInSerializer, body(request))
        if data["summarize"]:
            job = summaries.summarize_range_request(
                thread=thread, start_position=data["start_position"],
                end_position=data["end_position"], actor=actor_of(request))
            return Response({"job_id": str(job.pk)}, status=status.HTTP_202_ACCEPTED)
        collapse = collapses.collapse_create(
            thread=thread, start_position=data["start_position"], end_position=data["end_position"],
            summary_text=data["summary_text"], actor=actor_of(request),
            source=Collapse.Source.AGENT)
        return Response(s.CollapseSerializer(collapse).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=OpenApiTypes.OBJECT, responses=s.ThreadSerializer,
                   summary="Set the thread's automatic summarizer",
                   description='Body: {"token_budget": {...}, "per_run": {...}}; `{}` turns '
                               "summarization off for this thread even under a workspace "
                               "default; `null` removes the setting (the default applies again).")
    @action(detail=True, methods=["put"])
    def summarizer(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        if request.META.get("CONTENT_LENGTH") in (None, "", "0"):
            raise ValidationError({"non_field_errors": ["Send a JSON object, or null to remove."]})
        config = request.data
        if config is not None and not isinstance(config, dict):
            raise ValidationError({"non_field_errors": ["The body must be a JSON object or null."]})
        thread = summaries.summarizer_configure(thread=thread, config=config, actor=actor_of(request))
        return self.thread_response(thread)

    # -- blocks

    @extend_schema(responses=s.BlockListSerializer, summary="Blocks in render order")
    @action(detail=True, methods=["get"], url_path="blocks", pagination_class=None)
    def block_list(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        data = s.BlockSerializer(selectors.thread_blocks(thread=thread), many=True).data
        return Response({"results": data, "next": None})

    @extend_schema(methods=["PUT"], request=s.BlockInSerializer,
                   responses={200: s.BlockSerializer, 201: s.BlockSerializer})
    @extend_schema(methods=["DELETE"], responses={204: None})
    @action(detail=True, methods=["put", "delete"], url_path=r"blocks/(?P<name>[^/]+)")
    def block(self, request: Request, pk: str, name: str) -> Response:
        thread = self.get_object()
        if request.method == "DELETE":
            blocks.block_delete(thread=thread, name=name, actor=actor_of(request))
            return Response(status=status.HTTP_204_NO_CONTENT)
        data = parse(s.BlockInSerializer, body(request))
        block, created = blocks.block_upsert(thread=thread, name=name, actor=actor_of(request), **data)
        return Response(s.BlockSerializer(block).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    # -- state

    @extend_schema(methods=["GET"], responses=s.StateSerializer)
    @extend_schema(methods=["PUT", "PATCH"], request=s.StateWriteSerializer,
                   parameters=[OpenApiParameter("If-Match", str, OpenApiParameter.HEADER,
                                                description='The revision ETag, e.g. "3".')],
                   responses=s.StateSerializer,
                   description="PUT replaces state/memory; PATCH applies a JSON merge patch "
                               "(RFC 7386). A stale If-Match is refused with 412.")
    @action(detail=True, methods=["get", "put", "patch"], url_path="state")
    def state(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        if request.method == "GET":
            return self.state_response(thread)
        expected = if_match_revision(request)
        data = parse(s.StateWriteSerializer, body(request))
        thread = state.state_write(
            thread=thread, actor=actor_of(request), state=data.get("state", UNSET),
            memory=data.get("memory", UNSET), summary=data.get("summary", UNSET),
            reason=data.get("reason", ""),
            merge=request.method == "PATCH", expected_revision=expected)
        return self.state_response(thread)

    @extend_schema(responses=s.StateRevisionSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="state/revisions")
    def revisions(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        self.paginator.ordering = "revision"
        page = self.paginate_queryset(selectors.thread_revisions(thread=thread))
        docs = document.revision_documents(thread=thread, revisions=[r.revision for r in page])
        return self.get_paginated_response(
            s.StateRevisionSerializer(page, many=True, context={"documents": docs}).data)

    @extend_schema(request=None, responses=s.StateSerializer,
                   parameters=[OpenApiParameter("If-Match", str, OpenApiParameter.HEADER)])
    @action(detail=True, methods=["post"], url_path=r"state/revisions/(?P<revision>[0-9]+)/restore")
    def restore(self, request: Request, pk: str, revision: str) -> Response:
        thread = state.state_restore(thread=self.get_object(), revision=int(revision),
                                     actor=actor_of(request),
                                     expected_revision=if_match_revision(request))
        return self.state_response(thread)

    # -- clientai

    @extend_schema(request=s.InputSerializer, responses=s.StateSerializer)
    @action(detail=True, methods=["post"], url_path="input")
    def set_input(self, request: Request, pk: str) -> Response:
        data = parse(s.InputSerializer, body(request))
        thread = clientai.thread_set_input(thread=self.get_object(), input_data=data["input"],
                                           actor=actor_of(request),
                                           timestamp=data.get("timestamp"))
        return self.state_response(thread)

    @extend_schema(request=s.StepResultInSerializer, responses=s.StepResultSerializer)
    @action(detail=True, methods=["post"], url_path="results")
    def results(self, request: Request, pk: str) -> Response:
        data = parse(s.StepResultInSerializer, body(request))
        thread = clientai.thread_set_step_result(thread=self.get_object(), step=data["step"],
                                                 result=data["result"], actor=actor_of(request))
        return Response({"step": data["step"], "result": thread.last_results[data["step"]]})

    @extend_schema(responses=s.StepResultSerializer)
    @action(detail=True, methods=["get"], url_path=r"results/(?P<step>[^/]+)")
    def result(self, request: Request, pk: str, step: str) -> Response:
        thread = self.get_object()
        if step not in thread.last_results:
            raise NotFound(f"No result for step {step!r}.", details={"step": step})
        return Response({"step": step, "result": clientai.thread_get_step_result(thread=thread, step=step)})

    @extend_schema(request=None, responses=s.IterationSerializer)
    @action(detail=True, methods=["post"])
    def iteration(self, request: Request, pk: str) -> Response:
        value = clientai.thread_increment_iteration(thread=self.get_object(), actor=actor_of(request))
        return Response({"iteration": value})

    @extend_schema(request=s.MaxHistorySizeSerializer, responses=s.StateSerializer)
    @action(detail=True, methods=["put"], url_path="max-history-size")
    def max_history_size(self, request: Request, pk: str) -> Response:
        data = parse(s.MaxHistorySizeSerializer, body(request))
        thread = clientai.thread_set_max_history_size(thread=self.get_object(), size=data["size"],
                                                      actor=actor_of(request))
        return self.state_response(thread)

    @extend_schema(parameters=[s.HistoryQuerySerializer],
                   responses={200: OpenApiResponse(
                       OpenApiTypes.ANY, description="raw: a list of interactions; "
                       "else {\"text\": ...} in clientai's format")})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str) -> Response:
        query = parse(s.HistoryQuerySerializer, request.query_params)
        result = clientai.recent_history(thread=self.get_object(), n=query.get("n"), raw=query["raw"])
        return Response(result if query["raw"] else {"text": result})

    @extend_schema(request=None, responses=s.StateSerializer, summary="clientai clear()")
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, pk: str) -> Response:
        return self.state_response(clientai.thread_reset(thread=self.get_object(), actor=actor_of(request)))

    @extend_schema(request=None, responses=s.StateSerializer, summary="clientai clear_all()")
    @action(detail=True, methods=["post"], url_path="reset-all")
    def reset_all(self, request: Request, pk: str) -> Response:
        return self.state_response(
            clientai.thread_reset_all(thread=self.get_object(), actor=actor_of(request)))

    @extend_schema(request=None, responses=s.ClearedSerializer, summary="AgentScope clearContext")
    @action(detail=True, methods=["post"], url_path="clear-context")
    def clear_context(self, request: Request, pk: str) -> Response:
        clear = threads.thread_clear_context(thread=self.get_object(), actor=actor_of(request))
        return Response({"cleared": clear.event_count, "clear": s.ClearSerializer(clear).data})

    # -- render, windows, peteos

    @extend_schema(parameters=[s.ContextQuerySerializer], responses=s.ContextSerializer)
    @action(detail=True, methods=["get"])
    def context(self, request: Request, pk: str) -> Response:
        query = parse(s.ContextQuerySerializer, request.query_params)
        thread = self.get_object()
        if query["record"] and not request.auth.can_write:
            raise PermissionDenied("Recording a render needs a token with write scope.")
        max_tokens = query.get("max_tokens") or thread_model_settings(thread).budget
        rendered = rendering.render(
            thread=thread, max_tokens=max_tokens, strip_thinking=query["strip_thinking"],
            fmt=query["format"], on_oversize=query["on_oversize"])
        body = rendered.body
        if query["record"]:
            record = renders.render_record(thread=thread, rendered=rendered, actor=actor_of(request))
            body = {**body, "render_id": str(record.pk)}
        return Response(body)

    @extend_schema(parameters=[s.WindowQuerySerializer], responses=s.WindowSerializer)
    @action(detail=True, methods=["get"])
    def window(self, request: Request, pk: str) -> Response:
        query = parse(s.WindowQuerySerializer, request.query_params)
        thread = self.get_object()
        if "count" in query:
            window = rendering.window_by_count(thread=thread, count=query["count"])
        else:
            window = rendering.window_by_tokens(thread=thread, max_tokens=query["max_tokens"])
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
        return Response({"total_tokens": rendering.total_tokens(thread=self.get_object())})

    @extend_schema(parameters=[s.ExportQuerySerializer], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str) -> Response:
        query = parse(s.ExportQuerySerializer, request.query_params)
        thread = self.get_object()
        if query["format"] == "peteos":
            return Response(peteos.thread_to_peteos(thread=thread))
        return Response(transfer.thread_export(thread=thread))

    @extend_schema(request=OpenApiTypes.OBJECT, parameters=[s.ImportQuerySerializer],
                   responses={201: s.ThreadSerializer},
                   description="Body: a contextstore export or a peteos context JSON.")
    @action(detail=False, methods=["post"], url_path="import")
    def import_(self, request: Request) -> Response:
        query = parse(s.ImportQuerySerializer, request.query_params)
        thread = transfer.thread_import(workspace=request.auth.workspace, data=body(request),
                                        actor=actor_of(request), **query)
        return self.thread_response(thread, status.HTTP_201_CREATED)

    # -- runs and providers

    @extend_schema(responses=s.RunSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="runs")
    def run_list(self, request: Request, pk: str) -> Response:
        page = self.paginate_queryset(selectors.thread_runs(thread=self.get_object()))
        return self.get_paginated_response(s.RunSerializer(page, many=True).data)

    @extend_schema(methods=["GET"], responses=s.ProviderStateSerializer)
    @extend_schema(methods=["PUT"], request=s.ProviderStateInSerializer,
                   responses=s.ProviderStateSerializer)
    @action(detail=True, methods=["get", "put"], url_path=r"providers/(?P<name>[^/]+)")
    def provider(self, request: Request, pk: str, name: str) -> Response:
        thread = self.get_object()
        if request.method == "PUT":
            data = parse(s.ProviderStateInSerializer, body(request))
            obj = memories.provider_state_put(thread=thread, provider=name, state=data["state"],
                                              actor=actor_of(request))
        else:
            obj = ProviderState.objects.filter(thread=thread, provider=name).first()
            if obj is None:
                raise NotFound(f"No state for provider {name!r} on this thread.")
        return Response(s.ProviderStateSerializer(obj).data)


# ---------------------------------------------------------------------------- the rest

@extend_schema(tags=["collapses"])
class CollapseViewSet(viewsets.GenericViewSet):
    serializer_class = s.CollapseSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Collapse]:
        return Collapse.objects.filter(thread__workspace=self.request.auth.workspace).select_related(
            "thread", "summary_event__run")

    @extend_schema(request=None, responses=s.CollapseSerializer)
    @action(detail=True, methods=["post"])
    def undo(self, request: Request, pk: str) -> Response:
        collapse = collapses.collapse_undo(collapse=self.get_object(), actor=actor_of(request))
        return Response(s.CollapseSerializer(self.get_queryset().get(pk=collapse.pk)).data)


@extend_schema(tags=["runs"])
class RunViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.RunSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Run]:
        return Run.objects.filter(thread__workspace=self.request.auth.workspace)

    def _finish(self, request: Request, final: str) -> Response:
        data = parse(s.RunFinishSerializer, request.data if request.data else {})
        run = runs.run_finish(run=self.get_object(), status=final, actor=actor_of(request),
                              error=data["error"])
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.COMPLETED)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def fail(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.FAILED)

    @extend_schema(request=s.RunFinishSerializer, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def interrupt(self, request: Request, pk: str) -> Response:
        return self._finish(request, Run.Status.INTERRUPTED)


@extend_schema(tags=["memories"])
class MemoryViewSet(viewsets.GenericViewSet):
    serializer_class = s.MemorySerializer
    pagination_class = SearchResultsPagination

    @extend_schema(parameters=[s.MemoryQuerySerializer], responses=s.MemorySerializer(many=True),
                   summary="Recall memories (newest first; a search, so never more than limit)")
    def list(self, request: Request) -> Response:
        query = parse(s.MemoryQuerySerializer, request.query_params)
        found = self.paginate_queryset(
            selectors.memory_recall(workspace=request.auth.workspace, **query))
        return self.get_paginated_response(s.MemorySerializer(found, many=True).data)

    @extend_schema(request=s.MemoryInSerializer,
                   responses={200: s.MemorySerializer, 201: s.MemorySerializer})
    def create(self, request: Request) -> Response:
        data = parse(s.MemoryInSerializer, body(request))
        memory, created = memories.memory_remember(workspace=request.auth.workspace,
                                                   actor=actor_of(request), **data)
        return Response(s.MemorySerializer(memory).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


@extend_schema(tags=["jobs"])
class JobViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.JobSerializer
    lookup_value_regex = "[0-9a-fA-F-]{32,36}"  # DRF turns a malformed UUID into a 404

    def get_queryset(self) -> QuerySet[Job]:
        return Job.objects.filter(workspace=self.request.auth.workspace)
