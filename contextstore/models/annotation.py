"""Human review, as Langfuse's annotation queues: score configurations (a name's data type and
bounds), queues that ask people to score sessions, threads and LLM calls with them, and the
queue's items. Written only by services/annotation.py; a reviewer's scores are ordinary Score
rows by that person (services/scores.py)."""

from django.conf import settings
from django.db import models

from contextstore.fields import OrderedJSONField, RedactedCharField, RedactedTextField
from contextstore.models.reviews import Score
from contextstore.models.threads import Session, Thread
from contextstore.models.workspaces import Workspace


class ScoreConfig(models.Model):
    """What a score of this name is: numeric (optionally within min..max), categorical (one of
    `categories`) or boolean. Not edited once made (scores given under it keep their meaning):
    archived instead, and a new one made; archived configs still check their name's scores."""

    DataType = Score.DataType

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # score_config_name leads with it
    name = RedactedCharField(max_length=100)
    data_type = models.CharField(max_length=11, choices=DataType.choices)
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    categories = OrderedJSONField(default=list)
    description = RedactedTextField(blank=True, default="")
    archived = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="score_config_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.data_type})"

    @property
    def bounds(self) -> str:
        """"0–1", "≥ 0", "≤ 5" or "" (numeric configs)."""
        low, high = self.min_value, self.max_value
        if low is not None and high is not None:
            return f"{low:g}–{high:g}"
        if low is not None:
            return f"≥ {low:g}"
        return f"≤ {high:g}" if high is not None else ""


class AnnotationQueue(models.Model):
    """A list of things for people to score with the queue's score configs; assignees (none:
    every editor of the workspace) see it among their queues."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # annotation_queue_name leads with it
    name = RedactedCharField(max_length=200)
    description = RedactedTextField(blank=True, default="")
    score_configs = models.ManyToManyField(ScoreConfig, related_name="queues")
    assignees = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"],
                                               name="annotation_queue_name")]

    def __str__(self) -> str:
        return self.name


class AnnotationItem(models.Model):
    """One thing of a queue to score: a session (thread and seq NULL), a thread (seq NULL) or
    an LLM call (thread + the seq of its start, as its card names it). A thread's scores are
    the session's (a Score is on a session or a call). A reviewer who opens it holds
    a lease on it until `leased_until`, so no one else is handed it meanwhile; completing it
    records who and when, skipping hands the lease back and puts it at the queue's end."""

    class Status(models.TextChoices):
        PENDING = "pending"
        COMPLETED = "completed"

    class Kind(models.TextChoices):
        SESSION = "session"
        THREAD = "thread"
        CALL = "call", "LLM call"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    queue = models.ForeignKey(AnnotationQueue, on_delete=models.CASCADE, related_name="items",
                              db_index=False)  # annotation_item_next leads with it
    kind = models.CharField(max_length=8, choices=Kind.choices)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    seq = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=9, choices=Status.choices, default=Status.PENDING)
    # The order items are handed out in; skipping moves an item past the others.
    rank = models.BigIntegerField(default=0)
    leased_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                  on_delete=models.SET_NULL, related_name="+")
    leased_until = models.DateTimeField(null=True, blank=True)
    completed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    completed_label = RedactedCharField(max_length=200, blank=True, default="")
    completed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["queue", "status", "rank", "id"], name="annotation_item_next")]

    def __str__(self) -> str:
        where = f" #{self.seq}" if self.seq is not None else ""
        return f"{self.queue_id}/{self.pk} ({self.kind}{where}, {self.status})"
