"""The shape of an import (POST /threads/import/): a contextstore export or a peteos context
JSON, checked whole before services.transfer.thread_import takes a lock or writes a row.

The import door's one parser: the session and thread objects, the thread's fields (held to the
rules of the doors that write them one by one: summarizerspec, check_memory), the lists, each
event's stored place (seq, position, status; its fields are eventspec's, checked by the
service after redaction), each collapse, clear and block (blockspec). A refused import names
the place it is about, as an append does.
"""

from dataclasses import dataclass
from typing import Any

from contextstore.blockspec import check_block
from contextstore.documents import check_memory
from contextstore.errors import InvalidInput
from contextstore.eventspec import event_spec, parse_stored_datetime
from contextstore.fields import NUL_IN_NAME
from contextstore.models import Event
from contextstore.ranges import check_position
from contextstore.selectors.peteos import SLOT_ID_KEYS as PETEOS_SLOT_ID_KEYS
from contextstore.sessionspec import check_session_names
from contextstore.summarizerspec import summarizer_config_clean

FORMAT = "contextstore"
STATUSES = set(Event.Status.values)
_ID = str | int | float | None  # a message id as peteos writes it (looked up, so hashable)
# The thread fields an import takes, with the type each must have.
THREAD_FIELD_TYPES: dict[str, type] = {
    "state": dict, "last_results": dict, "extra": dict, "conversation_history": list,
    "iteration": int, "max_history_size": int, "summary": str, "system_prompt": str,
}


def check_import_document(data: Any) -> bool:
    """The document's outer shape; True when it is a peteos context (converted by the service,
    its own token counts kept), False for a contextstore export."""
    if not isinstance(data, dict):
        raise InvalidInput("The import must be a JSON object.")
    if data.get("format") == FORMAT:
        return False
    check_peteos(data)
    return True


def check_peteos(data: dict[str, Any]) -> None:
    """A peteos ``Context.raw_dict``: its messages, slot ids and anchor points."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise InvalidInput("Not a contextstore export nor a peteos context: no messages list.")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidInput(f"messages[{i}] must be an object.", details={"index": i})
        if "content" in message and not isinstance(message["content"], list | str):
            raise InvalidInput(f"messages[{i}].content must be a list of parts.", details={"index": i})
        if not isinstance(message.get("id"), _ID):
            raise InvalidInput(f"messages[{i}].id must be a string or a number.",
                               details={"index": i})
    for key in PETEOS_SLOT_ID_KEYS:
        if not isinstance(data.get(key), _ID):
            raise InvalidInput(f"{key} must be a message id.", details={key: "a message id"})
    anchors = data.get("anchor_points") or []
    if not isinstance(anchors, list) or not all(
        isinstance(a, list | tuple) and len(a) == 2 and isinstance(a[1], int) for a in anchors
    ):
        raise InvalidInput("anchor_points must be a list of [name, end_index] pairs.")


def thread_fields(thread_data: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The thread fields of an import (those of `names` it holds), held to the same rules as
    the doors that write them; the summarizer setting comes back normalised."""
    if not isinstance(thread_data, dict):
        raise InvalidInput("thread must be an object.")
    fields = {f: thread_data[f] for f in names if f != "name" and f in thread_data}
    for field, kind in THREAD_FIELD_TYPES.items():
        if field in fields and (not isinstance(fields[field], kind) or isinstance(fields[field], bool)):
            raise InvalidInput(f"thread.{field} must be a {kind.__name__}.")
    if fields.get("max_history_size", 0) < 0:
        raise InvalidInput("thread.max_history_size must be non-negative.")
    if "memory" in fields:
        check_memory(fields["memory"])
    if fields.get("summarizer") is not None:
        fields["summarizer"] = summarizer_config_clean(fields["summarizer"])
    return fields


def event_place(item: Any, index: int) -> tuple[int, tuple[int, str]]:
    """An exported event's stored seq and place (position, status)."""
    place = f"events[{index}]"
    if not isinstance(item, dict):
        event_spec(item, place)  # refused there, as every endpoint that takes events refuses it
    seq = check_position(f"{place}.seq", item.get("seq"))
    position = check_position(f"{place}.position", item.get("position", seq))
    status = item.get("status") or Event.Status.ACTIVE
    if status not in STATUSES:
        raise InvalidInput(f"{place}.status must be one of {sorted(STATUSES)}.",
                           details={f"{place}.status": f"one of {sorted(STATUSES)}"})
    # An event stands at its seq or earlier: a Summary where its range stood, a sync item's
    # rewrite where its old version stood (two active events never share one, checked below).
    if position > seq:
        raise InvalidInput(f"{place}.position must not be after its seq.",
                           details={f"{place}.position": "must not be after its seq"})
    return seq, (position, status)


def check_event_run(seqs: list[int], places: list[tuple[int, str]]) -> None:
    """The events' seqs run on without a gap (from any first: the oldest may have expired) and
    no two active events share a position."""
    first = seqs[0] if seqs else 1
    if seqs != list(range(first, first + len(seqs))):
        raise InvalidInput("Event seqs must run n, n+1, n+2… without gaps.")
    positions = [position for position, status in places if status == Event.Status.ACTIVE]
    if len(positions) != len(set(positions)):
        raise InvalidInput("Two active events stand at the same position.")


def stored_datetime(value: Any, place: str) -> Any:
    """A date-time both databases store and read back (eventspec.parse_stored_datetime)."""
    try:
        return parse_stored_datetime(value)
    except ValueError as exc:
        raise InvalidInput(f"{place}: {exc}", details={place: str(exc)}) from exc


def check_collapses(collapses: list[Any], events: list[Any]) -> None:
    summaries = {e["seq"] for e in events if e.get("type") == "Summary"}
    for c in collapses:
        summary_seq = c.get("summary_seq") if isinstance(c, dict) else None
        if not isinstance(summary_seq, int) or summary_seq not in summaries:
            raise InvalidInput("Each collapse needs the seq of its Summary event.")
        if c.get("undone_at"):
            stored_datetime(c["undone_at"], "collapses[].undone_at")


def check_clears(clears: list[Any]) -> None:
    for c in clears:
        if not isinstance(c, dict):
            raise InvalidInput("Each clear must be an object.")
        if c.get("undone_at"):
            stored_datetime(c["undone_at"], "clears[].undone_at")


def check_blocks(blocks: list[Any]) -> None:
    for b in blocks:
        if not isinstance(b, dict):
            raise InvalidInput("Each block must be an object.")
        check_block(b.get("name", ""), {"value": b.get("value"), "expr": b.get("expr"),
                                        "placement": b.get("placement", "suffix"),
                                        "order": b.get("order", 0)})


@dataclass
class Export:
    """A checked export: what services.transfer.thread_import writes."""

    session: dict[str, Any]  # key (None: none named), user_id, agent, title; checked
    thread_name: Any
    fields: dict[str, Any]
    events: list[dict[str, Any]]
    places: list[tuple[int, str]]
    first_seq: int
    # objects, checked; read as written (a missing field is the database's to refuse)
    blocks: list[Any]
    collapses: list[Any]
    clears: list[Any]


def parse_export(data: dict[str, Any], *, thread_fields_named: tuple[str, ...], name: str | None,
                 session_key: str | None = None, user_id: str | None = None) -> Export:
    """A contextstore export (or the service's conversion of a peteos context), checked whole.
    The events' own fields are checked by the service (eventspec) after redaction. The
    session's names are those of the export, where the request (`session_key`, `user_id`)
    names none; a key that neither names is the service's to make."""
    session = data.get("session") or {}
    if not isinstance(session, dict):
        raise InvalidInput("session must be an object.")
    names = {"key": session_key or session.get("key") or None,
             "user_id": user_id if user_id is not None else session.get("user_id", ""),
             "agent": session.get("agent", ""), "title": session.get("title", "")}
    check_session_names(key=names["key"] or "import-", user_id=names["user_id"],  # (its made key)
                        agent=names["agent"], title=names["title"])
    thread_data = data.get("thread") or {}
    fields = thread_fields(thread_data, thread_fields_named)
    thread_name = name or thread_data.get("name") or "main"
    if isinstance(thread_name, str) and "\x00" in thread_name:
        raise InvalidInput(f"thread.name: {NUL_IN_NAME}.", details={"thread.name": NUL_IN_NAME})
    lists = [data.get(key) or [] for key in ("events", "blocks", "collapses", "clears")]
    if not all(isinstance(x, list) for x in lists):
        raise InvalidInput("events, blocks, collapses and clears must be lists.")
    events, blocks, collapses, clears = lists
    placed = [event_place(item, i) for i, item in enumerate(events)]
    seqs, places = [seq for seq, _ in placed], [place for _, place in placed]
    check_event_run(seqs, places)
    check_collapses(collapses, events)
    check_clears(clears)
    check_blocks(blocks)
    return Export(session=names, thread_name=thread_name, fields=fields, events=events,
                  places=places, first_seq=seqs[0] if seqs else 1, blocks=blocks,
                  collapses=collapses, clears=clears)
