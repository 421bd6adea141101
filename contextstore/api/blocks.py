"""A thread's context blocks: list, put, delete (under
/api/v1/threads/{id}/blocks/) and their kept versions: list them, restore one (the undo of an
update or a delete), under /api/v1/threads/{id}/blocks/{name}/versions/."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from contextstore.api import serializers as s
from contextstore.api.common import ThreadSubjectViewSet, actor_of, body, parse
from contextstore.api.exceptions import api_not_found
from contextstore.api.pagination import page
from contextstore.blockspec import NAME_RULE, check_block
from contextstore.errors import error_body
from contextstore.models import ContextBlockVersion
from contextstore.selectors.threads import block_versions, thread_blocks
from contextstore.services import blocks


class BlockVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContextBlockVersion
        fields = ["id", "name", "version", "value", "expr", "placement", "order", "token_count",
                  "deleted", "reason", "actor", "created_at"]
        read_only_fields = fields


class BlockVersionListSerializer(serializers.Serializer):
    results = BlockVersionSerializer(many=True)
    next = serializers.URLField(allow_null=True)


@extend_schema(tags=["threads"])
class ThreadBlockViewSet(ThreadSubjectViewSet):
    # /threads/{id}/blocks/, /threads/{id}/blocks/{name}/ and the kept versions under
    # /threads/{id}/blocks/{name}/versions/.
    # (no docstring: drf-spectacular would copy it into every operation description)

    @extend_schema(responses=s.BlockListSerializer, summary="Blocks in render order")
    @action(detail=True, methods=["get"], url_path="blocks", pagination_class=None)
    def block_list(self, request: Request, pk: str) -> Response:
        thread = self.get_object()
        return page(s.BlockSerializer(thread_blocks(thread=thread), many=True).data)

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
        check_block(name, data)
        block, created = blocks.block_upsert(thread=thread, name=name, actor=actor_of(request), **data)
        return Response(s.BlockSerializer(block).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses=BlockVersionListSerializer,
                   summary="Every kept version of a block, newest first (deletions included)")
    @action(detail=True, methods=["get"], url_path=r"blocks/(?P<name>[^/]+)/versions",
            pagination_class=None)
    def block_versions(self, request: Request, pk: str, name: str) -> Response:
        versions = block_versions(thread=self.get_object(), name=name)[:500]
        return page(BlockVersionSerializer(versions, many=True).data)

    @extend_schema(request=None, responses=s.BlockSerializer,
                   summary="Make a kept version the block's content again (a new version)")
    @action(detail=True, methods=["post"],
            url_path=r"blocks/(?P<name>[^/]+)/versions/(?P<version>[0-9]+)/restore")
    def block_restore(self, request: Request, pk: str, name: str, version: str) -> Response:
        block = blocks.block_restore(thread=self.get_object(), name=name, version=int(version),
                                     actor=actor_of(request))
        return Response(s.BlockSerializer(block).data)


@csrf_exempt  # token-authenticated API, as api_not_found
def block_path_not_found(request: HttpRequest, pk: str, rest: str) -> JsonResponse:
    """A path under /threads/{id}/blocks/ that no route took: most likely a block name holding
    "/" (which even percent-encoded reaches the server as two segments). Creating one (PUT) is
    refused with the rule; any other method finds no such block, and says why."""
    name = rest.rstrip("/")
    if "/" not in name:
        return api_not_found(request)
    if request.method == "PUT":
        return JsonResponse(error_body("invalid", f"name {name!r}: {NAME_RULE}.", {"name": NAME_RULE}),
                            status=400)
    return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}: {NAME_RULE}, "
                                   "so no block has such a name.", {"name": NAME_RULE}), status=404)
