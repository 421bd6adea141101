"""Events and their text search."""

from django.db import models
from django.db.models import Q

from contextstore.fields import (
    AgentTextField,
    OrderedJSONField,
)
from contextstore.models.threads import Clear, Collapse, Run, Thread


class Event(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        COLLAPSED = "collapsed"
        CLEARED = "cleared"
        REVERTED = "reverted"  # a Summary whose collapse was undone
        RETRACTED = "retracted"  # taken back by the agent (a popped item); kept for audit
        # Retired by a framework sync (services/sync.py); kept as history, never in context.
        REPLACED = "replaced"  # an older version of an item the framework rewrote in place
        REMOVED = "removed"  # an item the framework dropped from its transcript

    # No index of its own: the unique (thread, seq) index serves every lookup by thread.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.BigIntegerField()
    # Where the event stands in the working context: its seq, or for a Summary the first seq
    # it replaces, so a summary sits where its range stood.
    position = models.BigIntegerField()
    type = models.CharField(max_length=64)  # open: any printable name (eventspec)
    role = models.CharField(max_length=32, blank=True, default="")
    content = AgentTextField(blank=True, default="")
    parts = OrderedJSONField(null=True, blank=True)
    data = OrderedJSONField(null=True, blank=True)
    # (run, seq) and (collapse) below are the only indexes these need; no automatic FK index.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="events", db_index=False)
    call_id = models.CharField(max_length=200, blank=True, default="")
    step = models.CharField(max_length=200, blank=True, default="")
    anchor = models.CharField(max_length=200, blank=True, default="")
    client_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    payload_hash = models.CharField(max_length=64, blank=True, default="")
    # A framework's own id for the item this event stores ("<namespace>:<key>"), set by sync;
    # unique among the thread's current versions, so a rewrite retires the old one first.
    item_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL (no key) is outside the unique index
    replaced_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False,
    )
    token_count = models.PositiveIntegerField(default=0)
    thinking_tokens = models.PositiveIntegerField(default=0)
    visible = models.BooleanField(default=True)
    # An Error event or a failed tool result: toolcalls.event_failed, decided once at write time.
    is_error = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    collapse = models.ForeignKey(
        Collapse, null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
        db_index=False,
    )
    cleared_by = models.ForeignKey(
        Clear, null=True, blank=True, on_delete=models.SET_NULL, related_name="members",
        db_index=False,
    )
    occurred_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="event_unique_seq"),
            models.UniqueConstraint(
                fields=["thread", "client_id"], condition=Q(client_id__isnull=False),
                name="event_unique_client_id",
            ),
            models.UniqueConstraint(
                fields=["thread", "item_key"],
                condition=Q(item_key__isnull=False) & ~Q(status__in=["replaced", "removed"]),
                name="event_unique_item_key",
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "type", "seq"], name="event_type"),
            # Most events belong to no run and no collapse: rows without one stay out of these
            # two (every insert paid for their NULL entries; `= x` implies IS NOT NULL).
            models.Index(fields=["run", "seq"], name="event_run", condition=Q(run__isnull=False)),
            # The working context read backward from the newest position.
            models.Index(
                fields=["thread", "position"], condition=Q(status="active", visible=True),
                name="event_working_context",
            ),
            # Previous/next error: the few error rows of a thread, by seq.
            models.Index(fields=["thread", "seq"], name="event_error", condition=Q(is_error=True)),
            models.Index(fields=["collapse"], name="event_collapse",
                         condition=Q(collapse__isnull=False)),
            models.Index(fields=["cleared_by"], name="event_cleared_by",
                         condition=Q(cleared_by__isnull=False)),
            # Deleting an event looks up the rows that point at it (the FK check on both
            # databases): without this, deleting a thread's n events scanned the table n times.
            models.Index(fields=["replaced_by"], name="event_replaced_by",
                         condition=Q(replaced_by__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"


class EventSearch(models.Model):
    """An event's searchable text (content, parts and data, upper-cased) under a trigram index,
    on PostgreSQL; filled off the insert path from EventSearchPending by services/search.py, so
    an insert maintains no trigram index (docs/architecture.md, "Text search"). Empty on
    SQLite, which searches the event columns themselves."""

    # Deleting events deletes these in the database: on PostgreSQL the constraint is ON DELETE
    # CASCADE (migrations/0001_initial.py; Django's DB_CASCADE cannot follow Event's Python CASCADE), so no
    # delete of events, the ORM's or raw SQL, pays a query for them or leaves text behind.
    event = models.OneToOneField(Event, primary_key=True, on_delete=models.DO_NOTHING,
                                 db_constraint=False, related_name="+")
    thread_id = models.BigIntegerField()  # a thread's search narrows the index's matches
    text = models.TextField()

    def __str__(self) -> str:
        return f"text of event {self.pk}"


class EventSearchPending(models.Model):
    """Ids of events inserted (or whose text changed) and not indexed yet: one row per INSERT
    statement, written by a PostgreSQL trigger in the same transaction as the events, so no
    committed event is ever left out. Searches read these events directly."""

    low = models.BigIntegerField()
    high = models.BigIntegerField()

    def __str__(self) -> str:
        return f"events {self.low}-{self.high}"


class CallCacheVerdict(models.Model):
    """A model call's prompt-cache verdict against the call before it in its thread, computed
    once by the worker (services/cache_verdicts.py) so the cache pages read it instead of
    rebuilding both requests on every view. One row per call start (the unique `call`)."""

    class Status(models.TextChoices):
        KEPT = "kept"
        PARTIAL = "partial"
        LOST = "lost"
        SHORT = "short"  # the call before was under the provider's minimum: nothing was cached
        FIRST = "first"  # no earlier call in the thread to compare with
        UNKNOWN = "unknown"  # either request is not known (not recorded)

    workspace = models.ForeignKey("contextstore.Workspace", on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey("contextstore.Session", on_delete=models.CASCADE, related_name="+",
                                null=True, blank=True)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="+")
    # No database key into the event table (as CallFigure): retention's and erasure's raw delete
    # settles these rows first (services/retention.events_delete_locked), the partitioned
    # table's trigger too (partitions.FORGET), and an ORM delete cascades as usual.
    call = models.OneToOneField(Event, on_delete=models.CASCADE, db_constraint=False,
                                related_name="cache_verdict")
    previous = models.ForeignKey(Event, on_delete=models.SET_NULL, null=True, blank=True,
                                 db_constraint=False, related_name="+")
    seq = models.BigIntegerField()  # the call's seq, which names it in URLs
    status = models.CharField(max_length=10, choices=Status.choices)
    cause = models.CharField(max_length=20, blank=True, default="")
    cause_text = AgentTextField(blank=True, default="")  # names blocks and events of the agent's
    where = AgentTextField(blank=True, default="")  # the first segment that differs, its label
    lost_tokens = models.PositiveIntegerField(default=0)
    lost_cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["session", "lost_tokens", "call"], name="cache_verdict_breaks")]

    def __str__(self) -> str:
        return f"call #{self.seq}: {self.status}"


class CallFigure(models.Model):
    """The numbers analytics read from a model call or an error row, extracted once when the
    event is written (services/history.py; the migration filled the rows stored before), so
    trends aggregate these narrow rows instead of parsing each call's JSON `data`
    (selectors/trends.py: the same SQL read them from the JSON). Rows of LLMCallStart,
    LLMComplete and is_error events only. Deleted with their event: Django's cascade on an ORM
    delete, the database's ON DELETE CASCADE on PostgreSQL (an unpartitioned event table), and
    retention's raw delete deletes them first (services/retention.py)."""

    event = models.OneToOneField(Event, primary_key=True, on_delete=models.CASCADE,
                                 db_constraint=False, related_name="figure")
    model = models.TextField(blank=True, default="")  # the call's, "" when none
    failed = models.BooleanField(default=False)  # an LLMComplete reporting its own failure
    cost = models.FloatField(null=True)
    input = models.FloatField(null=True)
    output = models.FloatField(null=True)
    cache_read = models.FloatField(null=True)
    cache_input = models.FloatField(null=True)
    # A call's: from its LLMCallStart (paired as selectors/calls pairs them), else the
    # latency_ms the agent reported
    latency = models.FloatField(null=True)

    def __str__(self) -> str:
        return f"figures of event {self.pk}"
