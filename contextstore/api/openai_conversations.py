"""The OpenAI Conversations API at /openai/v1 (`OpenAI(base_url=f"{server}/openai/v1",
api_key=<contextstore token>)`): conversations and their items as OpenAI's API answers them,
so the official `openai` SDK and the Agents SDK's OpenAIConversationsSession work unmodified.

Thin: each view parses (a body's metadata and items: contextstore/conversationspec.py), calls
one service (services/conversations.py) or selector (selectors/conversations.py) and answers
in OpenAI's shapes. Authentication, scopes, throttling and body parsing are the API's own;
every error leaves in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, with
the status the SDK maps to its exception classes. Not in the API's OpenAPI schema
(/api/schema/): OpenAI publishes this one.
"""

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contextstore.api.common import actor_of, token_of
from contextstore.api.exceptions import api_exception_handler
from contextstore.conversationspec import check_items, check_metadata
from contextstore.errors import InvalidInput
from contextstore.selectors import conversations as reads
from contextstore.services import conversations as svc

# OpenAI's `include` values (ResponseIncludable): accepted; every item is answered whole anyway.
INCLUDABLE = frozenset({
    "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
    "message.input_image.image_url", "computer_call_output.output.image_url",
    "code_interpreter_call.outputs", "reasoning.encrypted_content", "message.output_text.logprobs",
})
ERROR_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 429: "requests"}
ERROR_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


def openai_error(status: int, message: str, *, param: str | None = None,
                 code: str | None = None) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": code or ERROR_CODES.get(status)}}


def _param(details: Any) -> str | None:
    if isinstance(details, dict) and details:
        key = next(iter(details))
        return None if key in ("body", "errors", "non_field_errors") else str(key)
    return None


def openai_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The API's handler (statuses, Retry-After, rollback, outage 503s), its body in OpenAI's shape."""
    response = api_exception_handler(exc, context)
    if response is None:
        return None
    error = response.data.get("error", {}) if isinstance(response.data, dict) else {}
    status = response.status_code
    code = error.get("code")
    response.data = openai_error(status, error.get("message") or "Error.", param=_param(error.get("details")),
                                 code=code if status in (403, 409, 413, 503) else None)
    if status == 409:  # a conflict stays one: the SDK retries a 409 unless told not to
        response["x-should-retry"] = "false"
    return response


class OpenAIView(APIView):
    schema = None  # out of /api/schema/

    def get_exception_handler(self) -> Any:
        return openai_exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        for name, value in [*kwargs.items(), *request.query_params.items()]:
            if isinstance(value, str) and "\x00" in value:
                raise InvalidInput(f"Invalid '{name}': NUL characters (U+0000) are not accepted.",
                                   details={name: "NUL"})

    def body(self, request: Request) -> dict[str, Any]:
        data = request.data
        if not isinstance(data, dict):
            raise InvalidInput("The body must be a JSON object.", details={"body": "object"})
        return data


def _include(request: Request) -> None:
    wanted = request.query_params.getlist("include[]") + request.query_params.getlist("include")
    for value in wanted:
        if value not in INCLUDABLE:
            raise InvalidInput(f"Invalid value for 'include': {value!r} is not one of "
                               f"{', '.join(sorted(INCLUDABLE))}.", details={"include": value})


def _idempotency_key(request: Request) -> str:
    return request.headers.get("Idempotency-Key", "")[:200]


class ConversationsView(OpenAIView):
    def post(self, request: Request) -> Response:
        data = self.body(request)
        metadata = check_metadata(data.get("metadata"))
        items = check_items(data["items"] if data.get("items") is not None else [])
        session, _ = svc.conversation_create(
            workspace=token_of(request).workspace, items=items, metadata=metadata,
            actor=actor_of(request), idempotency_key=_idempotency_key(request))
        return Response(reads.conversation_object(session))


class ConversationView(OpenAIView):
    def get(self, request: Request, conversation_id: str) -> Response:
        session, _ = reads.conversation_get(workspace=token_of(request).workspace,
                                            conversation_id=conversation_id)
        return Response(reads.conversation_object(session))

    def post(self, request: Request, conversation_id: str) -> Response:
        data = self.body(request)
        if "metadata" not in data:
            raise InvalidInput("Missing required parameter: 'metadata'.", details={"metadata": "required"})
        metadata = check_metadata(data["metadata"])
        session = svc.conversation_update(workspace=token_of(request).workspace,
                                          conversation_id=conversation_id, metadata=metadata,
                                          actor=actor_of(request))
        return Response(reads.conversation_object(session))

    def delete(self, request: Request, conversation_id: str) -> Response:
        svc.conversation_delete(workspace=token_of(request).workspace, conversation_id=conversation_id,
                                actor=actor_of(request))
        return Response({"id": conversation_id, "object": "conversation.deleted", "deleted": True})


class ItemsView(OpenAIView):
    def get(self, request: Request, conversation_id: str) -> Response:
        _include(request)
        query = request.query_params
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            raise InvalidInput("Invalid 'limit': expected an integer between 1 and 100.",
                               details={"limit": query.get("limit")}) from None
        page = reads.items_page(workspace=token_of(request).workspace, conversation_id=conversation_id,
                                order=query.get("order", "desc"), limit=limit,
                                after=query.get("after") or None)
        return Response(page.answer())

    def post(self, request: Request, conversation_id: str) -> Response:
        _include(request)
        data = self.body(request)
        if "items" not in data:
            raise InvalidInput("Missing required parameter: 'items'.", details={"items": "required"})
        checked = check_items(data["items"])
        items = svc.items_add(workspace=token_of(request).workspace, conversation_id=conversation_id,
                              items=checked, actor=actor_of(request),
                              idempotency_key=_idempotency_key(request))
        return Response(reads.ItemPage(data=items, has_more=False).answer())


class ItemView(OpenAIView):
    def get(self, request: Request, conversation_id: str, item_id: str) -> Response:
        _include(request)
        return Response(reads.item_get(workspace=token_of(request).workspace, conversation_id=conversation_id,
                                       item_id=item_id))

    def delete(self, request: Request, conversation_id: str, item_id: str) -> Response:
        session = svc.item_delete(workspace=token_of(request).workspace, conversation_id=conversation_id,
                                  item_id=item_id, actor=actor_of(request))
        return Response(reads.conversation_object(session))


@csrf_exempt  # token-authenticated, no cookies
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any other path under /openai/v1 answers in OpenAI's error shape."""
    return JsonResponse(openai_error(404, f"Invalid URL ({request.method} {request.path})"), status=404)
