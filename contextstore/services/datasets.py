"""Datasets (issue 31): named collections of examples, a workspace's own, made from an LLM
call (what it was sent, as rendered, and what it answered) or a range of events, exported as
JSONL for evaluation and fine-tuning tools.

An item is a copy taken when it is added: later collapses or edits of the thread don't change
it. One JSONL line per item (docs/dashboard.md, "Datasets"):
  {"input": ..., "expected_output": ..., "metadata": {"kind", "source": {...}, "added_at", "added_by"}}
"""

import json
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F

from contextstore.errors import InvalidInput
from contextstore.models import Dataset, DatasetItem, Event, Thread, Workspace
from contextstore.selectors.calls import LLMCall, llm_call_reply, llm_call_sent
from contextstore.services.common import Actor, audit

MAX_RANGE = 500  # events in one range item
HIDDEN = (Event.Status.REPLACED, Event.Status.REMOVED, Event.Status.RETRACTED)


def dataset_ensure(*, workspace: Workspace, name: str) -> Dataset:
    """The workspace's dataset of that name (checked by its door: views/datasets), made on
    first use."""
    name = " ".join(str(name or "").split())[:200]
    dataset = Dataset.objects.filter(workspace=workspace, name=name).first()
    if dataset is None:
        try:
            with transaction.atomic():
                dataset = Dataset.objects.create(workspace=workspace, name=name)
        except IntegrityError:  # made meanwhile by someone else
            dataset = Dataset.objects.get(workspace=workspace, name=name)
    return dataset


def _source(thread: Thread, **more: Any) -> dict[str, Any]:
    session = thread.session
    return {"session": session.key, "session_id": session.pk, "thread": thread.name,
            "thread_id": thread.pk, **more}


def _event_json(e: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": e.seq, "type": e.type}
    if e.role:
        out["role"] = e.role
    if e.content:
        out["content"] = e.content
    if e.parts is not None:
        out["parts"] = e.parts
    if e.data is not None:
        out["data"] = e.data
    return out


def _add(*, dataset_name: str, thread: Thread, kind: str, input: Any, output: Any,
         source: dict[str, Any], actor: Actor) -> DatasetItem:
    dataset = dataset_ensure(workspace=thread.workspace, name=dataset_name)
    user: User | None = actor.user
    with transaction.atomic():
        item = DatasetItem.objects.create(
            workspace_id=thread.workspace_id, dataset=dataset, kind=kind, input=input,
            output=output, metadata={"source": source}, session_id=thread.session_id,
            user_id=thread.session.user_id,
            thread=thread, created_by=user)
        Dataset.objects.filter(pk=dataset.pk).update(item_count=F("item_count") + 1)
        audit(actor=actor, action="dataset.add", target=item, workspace=thread.workspace,
              dataset=dataset.pk, kind=kind, thread=thread.pk,
              **{k: v for k, v in source.items() if k.startswith("seq")})
    return item


def dataset_add_call(*, dataset_name: str, thread: Thread, call: LLMCall, actor: Actor) -> DatasetItem:
    """The call's input as it was sent (render record rebuilt, or the messages the agent
    logged), with the tools and params it logged, and its output: the reply as one assistant
    message (llm_call_reply: however the agent logged it), None when nothing was logged."""
    sent = llm_call_sent(thread=thread, call=call)
    if sent["source"] is None:
        raise InvalidInput("This call carries neither a render record nor the messages it sent.")
    input: dict[str, Any] = {"messages": sent["messages"], "tools": sent["tools"], "params": sent["params"]}
    if sent["system"]:
        input = {"system": sent["system"], **input}
    output = llm_call_reply(thread=thread, call=call).as_message()
    source = _source(thread, seq=call.seq, model=call.model or None)
    return _add(dataset_name=dataset_name, thread=thread, kind=DatasetItem.Kind.CALL, input=input,
                output=output, source=source, actor=actor)


def dataset_add_range(*, dataset_name: str, thread: Thread, start_position: int,
                      end_position: int, actor: Actor) -> DatasetItem:
    """The events at positions start–end (as the timeline shows them, cleared and collapsed
    ones too), oldest first; no output."""
    events = list(Event.objects.filter(thread=thread, position__gte=start_position,
                                       position__lte=end_position)
                  .exclude(status__in=HIDDEN).order_by("position", "seq")[: MAX_RANGE + 1])
    if not events:
        raise InvalidInput(f"No events at positions {start_position}–{end_position}.")
    if len(events) > MAX_RANGE:
        raise InvalidInput(f"A range holds at most {MAX_RANGE} events; choose a shorter one.")
    source = _source(thread, seq_from=events[0].seq, seq_to=events[-1].seq)
    return _add(dataset_name=dataset_name, thread=thread, kind=DatasetItem.Kind.RANGE,
                input=[_event_json(e) for e in events], output=None, source=source, actor=actor)


def item_line(item: DatasetItem) -> dict[str, Any]:
    """One item as its JSONL object."""
    return {"input": item.input, "expected_output": item.output,
            "metadata": {"kind": item.kind, "source": item.metadata.get("source", {}),
                         "added_at": item.created_at.isoformat().replace("+00:00", "Z"),
                         "added_by": item.created_by.get_username() if item.created_by else None}}


def dataset_jsonl(*, dataset: Dataset, batch: int = 200) -> Iterator[str]:
    """The dataset as JSONL lines (each ends with a newline), oldest item first, read in
    keyset batches so an export of any size holds one batch at a time."""
    last = 0
    while True:
        items = list(DatasetItem.objects.filter(dataset=dataset, id__gt=last)
                     .select_related("created_by").order_by("id")[:batch])
        for item in items:
            yield json.dumps(item_line(item), ensure_ascii=False, separators=(",", ":")) + "\n"
        if len(items) < batch:
            return
        last = items[-1].pk
