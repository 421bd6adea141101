"""GET /api/v1/datasets/ (the token's workspace's datasets) and
GET /api/v1/datasets/<id>/items.jsonl (one item per line; services/datasets.py, schema in
docs/dashboard.md "Datasets"). Read-only: items are added in the dashboard."""

from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from contextstore.api.common import token_of
from contextstore.api.renderers import ORJSONRenderer
from contextstore.models import Dataset
from contextstore.services.datasets import dataset_jsonl


class DatasetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dataset
        fields = ["id", "name", "item_count", "created_at", "updated_at"]


class JSONLRenderer(BaseRenderer):
    """Lets a client ask for application/jsonl; the action streams the lines itself."""

    media_type = "application/jsonl"
    format = "jsonl"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Any = None) -> bytes:
        return ORJSONRenderer().render(data, accepted_media_type, renderer_context)  # errors


@extend_schema(tags=["datasets"])
class DatasetViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = DatasetSerializer
    lookup_value_regex = "[0-9]+"

    def get_queryset(self) -> QuerySet[Dataset]:
        return Dataset.objects.filter(workspace=token_of(self.request).workspace)

    # Routed by hand (api/urls.py): the router would add a slash after ".jsonl".
    @extend_schema(responses={(200, "application/jsonl"): OpenApiResponse(
                       response=OpenApiTypes.STR,
                       description="One JSON object per line: input, expected_output, metadata.")},
                   summary="A dataset's items as JSONL, oldest first")
    def items(self, request: Request, pk: str) -> StreamingHttpResponse:
        dataset = self.get_object()
        response = StreamingHttpResponse(dataset_jsonl(dataset=dataset),
                                         content_type="application/jsonl; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="dataset-{dataset.pk}.jsonl"'
        return response


dataset_items = DatasetViewSet.as_view({"get": "items"}, renderer_classes=[ORJSONRenderer, JSONLRenderer])
