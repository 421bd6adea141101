import cProfile, pstats, time, io
import pytest
from django.test import Client
from contextstore.bench.over_http import message
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure_by_key
from contextstore.services.workspaces import workspace_ensure, api_token_create

@pytest.mark.django_db
def test_prof():
    ws, _ = workspace_ensure(slug="p", name="p")
    _, tok = api_token_create(workspace=ws, name="t", scope="write", actor=Actor.system("t"))
    th = thread_ensure_by_key(workspace=ws, session_key="s", name="main", actor=Actor.system("t")) if False else None
    c = Client(HTTP_AUTHORIZATION=f"Bearer {tok}")
    r = c.post("/api/v1/threads/ensure/", {"session_key": "s", "name": "m"}, content_type="application/json")
    tid = r.json()["id"]
    for start in range(0, 1000, 500):
        c.post(f"/api/v1/threads/{tid}/events/", {"events": [message(start+i, "x") for i in range(500)]}, content_type="application/json")
    def t(url, n=200):
        xs = []
        for _ in range(n):
            a = time.perf_counter(); r = c.get(url); xs.append(time.perf_counter() - a)
            assert r.status_code == 200, r.content[:300]
        xs.sort(); return xs[len(xs)//2]*1000
    for _ in range(2):
        h = t("/healthz"); th = t(f"/api/v1/threads/{tid}/"); cx = t(f"/api/v1/threads/{tid}/context/?max_tokens=8000"); rec = t(f"/api/v1/threads/{tid}/context/?max_tokens=8000&record=true")
        print(f"healthz {h:.2f} thread {th:.2f} ({th/h:.2f}) context {cx:.2f} ({cx/h:.2f}) record {rec:.2f} ({rec/cx:.2f})")
    pr = cProfile.Profile(); pr.enable()
    for _ in range(200): c.get(f"/api/v1/threads/{tid}/context/?max_tokens=8000")
    pr.disable(); s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(40); print(s.getvalue())
