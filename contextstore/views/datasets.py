"""Datasets: "Add to dataset" on an LLM call's card and on a selected range (editors), the
workspace's datasets page, and their JSONL export (services/datasets.py)."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.vary import vary_on_headers

from contextstore.errors import InvalidInput
from contextstore.models import Dataset, DatasetItem, Thread
from contextstore.ranges import positive_int
from contextstore.selectors.calls import llm_call_at
from contextstore.services.datasets import dataset_add_call, dataset_add_range, dataset_jsonl
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    after_action,
    current_workspace,
    query_int,
    thread_action,
    visible_workspaces,
)
from contextstore.views.experiments import dataset_experiments_context

ITEMS_PAGE = 50


def _position(raw: str | None) -> int:
    position = positive_int((raw or "").strip())
    if position is None:
        raise InvalidInput("Choose a range of positions first.")
    return position


def _dataset_name(raw: str) -> str:
    if not " ".join(raw.split()):
        raise InvalidInput("Name the dataset.")
    return raw


@thread_action
def call_to_dataset(request: DashboardRequest, thread: Thread, seq: int) -> HttpResponse:
    call = llm_call_at(thread=thread, seq=seq)
    if call is None:
        raise Http404("No LLM call at that seq.")
    item = dataset_add_call(dataset_name=_dataset_name(request.POST.get("dataset", "")), thread=thread,
                            call=call, actor=actor_for(request))
    return after_action(request, reverse("contextstore:dataset", args=[item.dataset_id]))


@thread_action
def range_to_dataset(request: DashboardRequest, thread: Thread) -> HttpResponse:
    name = _dataset_name(request.POST.get("dataset", ""))
    start = _position(request.POST.get("start_position"))
    end = _position(request.POST.get("end_position"))
    if end < start:
        raise InvalidInput("Choose a range: the first position, then a later or equal one.")
    item = dataset_add_range(dataset_name=name, thread=thread, start_position=start,
                             end_position=end, actor=actor_for(request))
    return after_action(request, reverse("contextstore:dataset", args=[item.dataset_id]))


@login_required
def dataset_list(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    datasets = list(Dataset.objects.filter(workspace=workspace)[:500]) if workspace else []
    return render(request, "contextstore/datasets.html", {
        "workspace": workspace, "datasets": datasets})


def _dataset(request: DashboardRequest, pk: int) -> Dataset:
    """A dataset of a workspace the person belongs to; another's is a 404."""
    dataset = Dataset.objects.filter(pk=pk, workspace__in=visible_workspaces(request.user)).first()
    if dataset is None:
        raise Http404("No such dataset.")
    return dataset


@login_required
@vary_on_headers("HX-Request")
def dataset_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    after = query_int(request.GET.get("after"))
    items = DatasetItem.objects.filter(dataset=dataset).select_related("created_by").order_by("id")
    if after is not None:
        items = items.filter(id__gt=after)
    page = list(items[: ITEMS_PAGE + 1])
    context = {"dataset": dataset, "workspace": dataset.workspace,
               **dataset_experiments_context(request, dataset),
               "items": page[:ITEMS_PAGE],
               "next": page[ITEMS_PAGE - 1].pk if len(page) > ITEMS_PAGE else None}
    template_name = "contextstore/dataset_detail.html"
    if request.htmx and after:
        template_name += "#item-rows"  # "more items"
    return render(request, template_name, context)


@login_required
def dataset_export(request: DashboardRequest, pk: int) -> StreamingHttpResponse:
    dataset = _dataset(request, pk)
    response = StreamingHttpResponse(dataset_jsonl(dataset=dataset), content_type="application/jsonl")
    name = slugify(dataset.name) or f"dataset-{dataset.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
    return response
