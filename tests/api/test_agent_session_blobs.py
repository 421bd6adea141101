"""Blobs at the sizes a long LangGraph thread's channel values reach."""

import base64
import os
from contextlib import nullcontext

from django.db import connection

from contextstore.models import AuditLog, CommitRecord, ThreadBlob
from contextstore.services.commits import BINARY_FROM_BYTES

URL = "/api/v1/agent-sessions/"
WHO = {"app": "langgraph", "user_id": "", "key": "t1"}


def test_a_commit_of_big_and_small_blobs_stores_each_byte_and_replays(api_client, django_assert_num_queries):
    """A blob past BINARY_FROM_BYTES (sent to PostgreSQL apart from the SQL, in binary) beside
    small ones, empty and NUL-holding ones: each stored and read back exactly, in the same
    statements as small ones; the same batch again answers the same and writes nothing."""
    big = os.urandom(BINARY_FROM_BYTES * 4) + b"\x00"
    blobs = {"ch/messages/2": big, "ch/turns/2": b"\x01", "ch/empty/2": b"", "cp/c1": b"\x00\xffcp"}
    body = {**WHO, "create": True, "batch_id": "b1",
            "events": [{"type": "Checkpoint", "client_id": "c1", "visible": False, "content": "step 1"}],
            "blobs": [{"key": k, "data": base64.b64encode(v).decode(), "content_type": "msgpack",
                       "meta": {"channel": k}} for k, v in blobs.items()]}
    first = api_client.post(URL + "commit/", body, format="json")
    assert first.status_code == 200, first.json()
    # PostgreSQL: BEGIN, the locked read, the event's statement, the blobs' with the record, COMMIT
    with django_assert_num_queries(5) if connection.vendor == "postgresql" else nullcontext():
        answer = api_client.post(URL + "commit/", {**body, "batch_id": "b2", "events": [
            {"type": "Checkpoint", "client_id": "c2", "visible": False, "content": "step 2"}]}, format="json")
    assert answer.status_code == 200, answer.json()
    stored = {b.key: b for b in ThreadBlob.objects.all()}
    assert {k: bytes(b.data) for k, b in stored.items()} == blobs
    messages = stored["ch/messages/2"]
    assert messages.size == len(big) and messages.meta == {"channel": "ch/messages/2"}
    read = api_client.get(URL + "read/", {**WHO, "blob_prefix": "ch/", "blob": "cp/c1", "limit": 0}).json()
    assert {b["key"]: base64.b64decode(b["data"]) for b in read["blobs"]} == blobs
    rows = (AuditLog.objects.count(), CommitRecord.objects.count(), ThreadBlob.objects.count())
    again = api_client.post(URL + "commit/", body, format="json")
    assert again.status_code == 200 and again.json() == first.json()
    assert (AuditLog.objects.count(), CommitRecord.objects.count(), ThreadBlob.objects.count()) == rows


def test_a_commit_of_a_big_blob_alone_is_audited_in_its_own_row(api_client):
    """Pending writes (no event): the blob, its audit row and the record, bound in binary."""
    big = bytes(range(256)) * (BINARY_FROM_BYTES // 128)
    body = {**WHO, "create": True, "batch_id": "w1",
            "blobs": [{"key": "w/c1/task/0", "data": base64.b64encode(big).decode(), "meta": None}]}
    first = api_client.post(URL + "commit/", body, format="json")
    assert first.status_code == 200, first.json()
    assert bytes(ThreadBlob.objects.get(key="w/c1/task/0").data) == big
    [log] = AuditLog.objects.filter(action="blobs.put")
    assert log.details["keys"] == ["w/c1/task/0"] and log.details["count"] == 1
    assert api_client.post(URL + "commit/", body, format="json").json() == first.json()
    assert AuditLog.objects.filter(action="blobs.put").count() == 1
