"""Comments, scores, share links and datasets."""

from django.conf import settings
from django.db import models

from contextstore.fields import (
    OrderedJSONField,
    RedactedCharField,
    RedactedTextField,
)
from contextstore.models.threads import Session, Thread
from contextstore.models.workspaces import ApiToken, Workspace


class Comment(models.Model):
    """A person's note on a session, or on one event of its threads (an LLM call is named by
    its call's seq). Written only by services/comments.py; the text is the person's, shown
    escaped (Markdown through contextstore/markdown.py, which escapes first)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="comments",
                                db_index=False)  # comment_session leads with it
    # Both set: on the event at `seq` of `thread`; both NULL: on the session.
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                               db_index=False)  # comment_event leads with it
    seq = models.BigIntegerField(null=True, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    author_label = RedactedCharField(max_length=200, blank=True, default="")
    text = RedactedTextField()
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["session", "created_at"], name="comment_session"),
            models.Index(fields=["thread", "seq"], name="comment_event"),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} on {f'#{self.seq}' if self.seq else f'session {self.session_id}'}"


class Score(models.Model):
    """An evaluation of a session or of one LLM call (thread + the call's seq), as Langfuse
    keeps them: a name, a value of one data type, an optional comment, and who gave it (a
    person or an API token: evaluators post scores through the API). services/scores.py."""

    class DataType(models.TextChoices):
        NUMERIC = "numeric"
        CATEGORICAL = "categorical"
        BOOLEAN = "boolean"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # score_name leads with it
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="scores",
                                db_index=False)  # score_session leads with it
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                               db_index=False)  # score_event leads with it
    seq = models.BigIntegerField(null=True, blank=True)
    name = RedactedCharField(max_length=100)
    data_type = models.CharField(max_length=11, choices=DataType.choices)
    # numeric: the number; boolean: 1 or 0; categorical: NULL.
    value = models.FloatField(null=True, blank=True)
    # categorical: the category; boolean: "true" or "false"; numeric: "".
    string_value = RedactedCharField(max_length=200, blank=True, default="")
    comment = RedactedTextField(blank=True, default="")
    author_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    author_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    author_label = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["session", "created_at"], name="score_session"),
            models.Index(fields=["thread", "seq"], name="score_event"),
            models.Index(fields=["workspace", "name", "session"], name="score_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.display}"

    @property
    def display(self) -> str:
        if self.data_type == self.DataType.NUMERIC:
            return f"{self.value:g}"
        return self.string_value


class ShareLink(models.Model):
    """A read-only link to a session, an event or an LLM call (services/sharing.py): whoever
    holds the token sees that target, without logging in, until it expires or is revoked.
    Only the token's sha256 is kept; the link is shown once, when it is made."""

    class Kind(models.TextChoices):
        SESSION = "session"
        EVENT = "event"
        CALL = "call", "LLM call"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="share_links",
                                  db_index=False)  # share_link_token leads with it
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links",
                                db_index=False)  # share_link_session leads with it
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.CASCADE,
                               related_name="share_links")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    seq = models.BigIntegerField(null=True, blank=True)
    prefix = models.CharField(max_length=16)
    token_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "token_hash"],
                                               name="share_link_token")]
        indexes = [models.Index(fields=["token_hash"], name="share_link_lookup"),
                   models.Index(fields=["session", "-created_at"], name="share_link_session")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.kind}, until {self.expires_at:%Y-%m-%d %H:%M})"

    def is_live(self, now) -> bool:
        return self.revoked_at is None and self.expires_at > now


class Dataset(models.Model):
    """A named collection of examples (calls, ranges of events) of a workspace, exported as
    JSONL (services/datasets.py)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="datasets",
                                  db_index=False)  # dataset_unique_name leads with it
    name = RedactedCharField(max_length=200)
    item_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="dataset_unique_name")]

    def __str__(self) -> str:
        return self.name


class DatasetItem(models.Model):
    """One example: what went in (a call's messages as rendered, or a range's events) and what
    came out. A copy: it stays when the session is deleted by retention (its source ids go
    NULL), and goes when the person it came from is erased (services/erasure.py)."""

    class Kind(models.TextChoices):
        CALL = "call", "LLM call"
        RANGE = "range", "range of events"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+",
                                  db_index=False)  # dataset_item_user leads with it
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items",
                                db_index=False)  # dataset_item_order leads with it
    kind = models.CharField(max_length=8, choices=Kind.choices)
    input = OrderedJSONField(default=list)
    output = OrderedJSONField(null=True, blank=True)
    metadata = OrderedJSONField(default=dict)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    thread = models.ForeignKey(Thread, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    # The source session's end user, so erasing that person finds the copy after retention.
    user_id = models.CharField(max_length=255, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["dataset", "id"], name="dataset_item_order"),
                   models.Index(fields=["workspace", "user_id"], name="dataset_item_user")]

    def __str__(self) -> str:
        return f"{self.dataset_id}/{self.pk} ({self.kind})"
