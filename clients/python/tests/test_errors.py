"""API errors become one ContextStoreError subclass per status, carrying the API's error shape."""

from __future__ import annotations

import contextstore_client as cs
import httpx
import pytest
from client_fakes import error, handle_of, settle

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("status", "raised"), [
    (400, cs.InvalidInput), (401, cs.Unauthorized), (403, cs.Forbidden), (404, cs.NotFound),
    (409, cs.Conflict), (412, cs.StaleRevision), (413, cs.PayloadTooLarge), (418, cs.ContextStoreError),
    (507, cs.ServerError),
])
async def test_each_status_raises_its_error_with_the_apis_code_message_and_details(
        connect, api, status, raised):
    api.on("PUT", "threads/7/blocks/persona/", error(status, "some_code", "what went wrong", field="value"))
    with pytest.raises(cs.ContextStoreError) as caught:
        await settle(handle_of(connect(retries=0)).put_block("persona", value="x"))
    assert type(caught.value) is raised
    assert (caught.value.status, caught.value.code, caught.value.message, caught.value.details) == (
        status, "some_code", "what went wrong", {"field": "value"})
    assert str(caught.value) == "what went wrong"
    assert repr(caught.value) == f"{raised.__name__}({status}, 'some_code', 'what went wrong')"


async def test_an_answer_not_in_the_error_shape_still_raises_with_its_text(connect, api):
    api.on("GET", "threads/7/state/", lambda request: httpx.Response(401, text="<html>login</html>"))
    with pytest.raises(cs.Unauthorized) as caught:
        await settle(handle_of(connect()).state())
    assert (caught.value.code, caught.value.message, caught.value.details) == (
        "http_error", "<html>login</html>", {})


async def test_an_invalid_token_is_refused_once_not_retried(connect, api):
    api.on("GET", "threads/7/state/", error(401, "not_authenticated", "Invalid token."))
    with pytest.raises(cs.Unauthorized):
        await settle(handle_of(connect()).state())
    assert len(api.seen) == 1


def test_every_error_is_a_context_store_error():
    for name in ("InvalidInput", "Unauthorized", "Forbidden", "NotFound", "Conflict", "StaleRevision",
                 "PayloadTooLarge", "Throttled", "ServerError", "ConnectionFailed"):
        assert issubclass(getattr(cs, name), cs.ContextStoreError)
