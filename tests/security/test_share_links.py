"""Finding 3: share pages read from a replica when one is configured, the link itself included,
so a link revoked (or expired) on the primary still opened while the replica lagged. The link
is now always read from the primary; the rest of the page may still read the replica. Against
a real lagging replica (PostgreSQL): tests/test_replicas.py,
test_a_revoked_share_link_stops_opening_at_once_while_the_replica_lags."""

from axes.models import AccessAttempt
from django.db import DEFAULT_DB_ALIAS

from contextstore import db_router
from contextstore.models import Event, ShareLink


def test_a_share_page_reads_its_link_from_the_primary_and_the_rest_from_a_replica(rf, settings):
    settings.DATABASE_ROUTERS = ["contextstore.db_router.ReplicaRouter"]
    assert db_router.lag_tolerant(rf.get("/share/some-token/"))  # the page may lag
    token = db_router.read_alias.set("replica_1")
    try:
        assert ShareLink.objects.all().db == DEFAULT_DB_ALIAS  # revoked or expired: at once
        assert AccessAttempt.objects.all().db == DEFAULT_DB_ALIAS  # a login lockout: at once
        assert Event.objects.all().db == "replica_1"
    finally:
        db_router.read_alias.reset(token)
