"""Shape checks live at the boundary: every `raise InvalidInput` left in contextstore/services is
listed here by function, as a rule that needs stored data, a lock or the database to decide
(a state conflict, "not in this workspace", a stale revision, a limit counted in the DB), or as
a shape check not moved yet, with the door that would take it. A new one fails this test until
it is classified; a shape check belongs in the door's parser (an API serializer, a dashboard
form, eventspec/blockspec/importspec/annotationspec/summarizerspec/storespec/conversationspec),
not in a service."""

import ast
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.nodb

SERVICES = Path(__file__).resolve().parent.parent / "contextstore" / "services"

# Rules a service alone can decide: they read stored rows or need the thread's lock.
STORED_DATA_RULES = {
    "collapses.collapse_step": (1, "no active events in the range, read under the lock"),
    "conversations._retired_ids": (1, "an item id the conversation holds already (a stored event)"),
    "datasets.dataset_add_call": (1, "the stored call holds neither a render record nor its messages"),
    "datasets.dataset_add_range": (2, "no stored events at the positions; the range's stored size"),
    "document.document_restore": (1, "the stored revision does not hold a whole document"),
    "renders.call_hashes_check": (1, "a hash names a text this workspace has not stored"),
    "renders.llm_call_prepare": (1, "render_id is not a stored render of this thread"),
    "replays.replay_request": (2, "the stored call recorded neither a render nor its messages; "
                                  "no model named and the stored call recorded none"),
    "replays.replay_turns": (1, "the edited message is not in the stored call's request"),
    "sync._apply": (1, "a key named again by an earlier part of the upload (staged rows); "
                       "within one part syncspec refuses it"),
    "sharing.share_link_create": (1, "the thread has no stored event (or call) at that seq"),
    "summaries.requests.summarize_range_request": (2, "no active events in the range; the events "
                                                      "counted in the DB"),
    "threads.unclear_step": (1, "the stored clear is gone"),
    "transfer.thread_import": (3, "the database refuses the import (IntegrityError, DataError, "
                                  "a malformed value met while writing)"),
    # Not input at all: the OIDC_ROLE_MAP setting, parsed when a person signs in.
    "sso.role_map_parse": (4, "the OIDC_ROLE_MAP setting, not a request"),
}

# Shape checks still in a service, with the doors that rely on it: none since issue 46.5 (each
# moved to its doors' parser: syncspec, sessionspec, collapsespec, retentionspec, workspacespec,
# eventspec, documents.check_object, the API's serializers, the admin's and dashboard's forms).
SHAPE_NOT_MOVED_YET: dict[str, int] = {}


def invalid_input_raises() -> Counter[str]:
    """`raise InvalidInput` in contextstore/services, counted by module.function."""
    found: Counter[str] = Counter()
    for path in sorted(SERVICES.rglob("*.py")):
        module = ".".join(path.relative_to(SERVICES).with_suffix("").parts)

        def walk(node: ast.AST, names: list[str], module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    walk(child, [*names, child.name])
                    continue
                if isinstance(child, ast.Raise) and child.exc is not None:
                    exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                    if isinstance(exc, ast.Name) and exc.id == "InvalidInput":
                        found[f"{module}.{'.'.join(names) or '<module>'}"] += 1
                walk(child, names)

        walk(ast.parse(path.read_text()), [])
    return found


def test_every_invalid_input_left_in_the_services_is_classified():
    classified = Counter({name: count for name, (count, _) in STORED_DATA_RULES.items()})
    classified.update(SHAPE_NOT_MOVED_YET)
    found = invalid_input_raises()
    new = {name: found[name] - classified[name] for name in found if found[name] > classified[name]}
    assert not new, (
        f"New InvalidInput in services: {new}. A shape check belongs at the door (a serializer, "
        "a form, a *spec module); a rule that needs stored data goes in STORED_DATA_RULES.")
    # one moved or deleted: take it off the list, so the list stays the truth
    gone = {name: classified[name] - found[name] for name in classified if classified[name] > found[name]}
    assert not gone, f"Listed here but no longer in services: {gone}"


def test_the_count_only_goes_down():
    # 135 at the start of issue 46.5, 70 before its last part; the rules that need stored data
    assert sum(invalid_input_raises().values()) <= 23
