"""The long-term store: items by (namespace, key) per workspace, every change a version.

One store stands behind every long-term-memory contract (LangGraph's BaseStore, Anthropic's
memory tool files, ADK's memory service; services/store.py). A namespace is a list of labels,
kept as one `path` string, "\\x1f" + "\\x1f".join(labels) + "\\x1f" (labels cannot hold U+001F,
so the separator is unambiguous): a namespace prefix is a string prefix, a range
scan of the (workspace, path, key) index on both databases (the column compares bytewise: the
"C" collation on PostgreSQL, SQLite's default BINARY); a suffix is a string suffix and a label
anywhere is a substring (erasure).

A deleted item keeps its row (`deleted_at` set, `value` NULL) so its versions stay visible and
a person can undo the deletion; a later put revives it with the next version.
"""

from typing import Any

from django.db import models
from django.db.models import Q

from contextstore.fields import AgentTextField, OrderedJSONField, RedactedCharField
from contextstore.models.workspaces import Workspace

SEPARATOR = "\x1f"


class BytewiseCharField(models.CharField):
    """A CharField compared byte by byte on PostgreSQL too (its "C" collation), so a prefix is
    a range of the index whatever the database's locale."""

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


def namespace_path(labels: list[str] | tuple[str, ...]) -> str:
    return SEPARATOR + SEPARATOR.join(labels) + SEPARATOR if labels else SEPARATOR


def path_labels(path: str) -> list[str]:
    return path.strip(SEPARATOR).split(SEPARATOR) if path.strip(SEPARATOR) else []


class StoreItem(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="store_items",
                                  db_index=False)  # store_item_unique leads with it
    path = BytewiseCharField(max_length=2000)  # the namespace (see the module's docstring)
    depth = models.PositiveSmallIntegerField()  # how many labels
    key = BytewiseCharField(max_length=1000)
    value = OrderedJSONField(null=True, blank=True)  # NULL: deleted
    # The words recall by words searches: the text at the item's index fields, lowercased.
    text = AgentTextField(blank=True, default="")
    # The put's `index`: NULL the default (the whole value), [] not indexed, else field paths.
    index_fields = models.JSONField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)
    ttl_minutes = models.FloatField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "path", "key"],
                                               name="store_item_unique")]
        indexes = [
            models.Index(fields=["expires_at"], name="store_item_expiry",
                         condition=Q(expires_at__isnull=False, deleted_at__isnull=True)),
            models.Index(fields=["workspace", "-updated_at"], name="store_item_recent"),
        ]

    def __str__(self) -> str:
        return "/".join(self.namespace) + f": {self.key}"

    @property
    def namespace(self) -> list[str]:
        return path_labels(self.path)


class StoreVector(models.Model):
    """One embedding of an item (one per index field), unit length, float32 little-endian."""

    item = models.ForeignKey(StoreItem, on_delete=models.CASCADE, related_name="vectors",
                             db_index=False)  # store_vector_unique leads with it
    field = models.CharField(max_length=200)
    dims = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "field"], name="store_vector_unique")]

    def __str__(self) -> str:
        return f"{self.item_id}:{self.field}"


class StoreItemVersion(models.Model):
    """Every version an item has had, the current one included; a deletion is a version too."""

    class Action(models.TextChoices):
        PUT = "put"
        DELETE = "delete"
        MOVE_IN = "move_in"  # moved here from `other_key`
        MOVE_OUT = "move_out"  # moved away to `other_key`
        RESTORE = "restore"  # a person undid a change (the value of version `restored`)
        EXPIRE = "expire"  # its TTL ran out

    item = models.ForeignKey(StoreItem, on_delete=models.CASCADE, related_name="versions",
                             db_index=False)  # store_version_unique leads with it
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=8, choices=Action.choices)
    value = OrderedJSONField(null=True, blank=True)  # NULL: the item was deleted by it
    other_key = models.CharField(max_length=1000, blank=True, default="")
    restored = models.PositiveIntegerField(null=True, blank=True)
    actor = RedactedCharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["item", "version"]
        constraints = [models.UniqueConstraint(fields=["item", "version"], name="store_version_unique")]

    def __str__(self) -> str:
        return f"{self.item_id} v{self.version} {self.action}"
