"""The schema against docs/scaling.md's Citus plan (contextstore/scaling_plan.py): every table
classified, every unique key of a distributed table holding workspace or written down with its
planned change, no foreign key Citus would refuse. A new table or constraint that blocks the
plan fails here until the plan (and the doc) say what becomes of it. No database: model meta."""

import re
from pathlib import Path

from django.apps import apps
from django.db import models
from django.test.utils import isolate_apps

from contextstore import scaling_plan
from contextstore.scaling_plan import DISTRIBUTED, LOCAL, PLAN, REFERENCE

DOC = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"


def concrete_models() -> list[type[models.Model]]:
    return [m for m in apps.get_models(include_auto_created=True)
            if not m._meta.abstract and not m._meta.proxy]


def unique_keys(model: type[models.Model]) -> list[tuple[str, ...]]:
    """Every unique key but the primary key, as field names."""
    meta = model._meta
    keys = [(f.name,) for f in meta.concrete_fields if f.unique and not f.primary_key]
    keys += [tuple(names) for names in meta.unique_together]
    keys += [tuple(c.fields) for c in meta.constraints
             if isinstance(c, models.UniqueConstraint) and c.fields]
    keys += [("<expressions>", c.name) for c in meta.constraints
             if isinstance(c, models.UniqueConstraint) and not c.fields]
    return keys


def plan_problems(all_models, plan=PLAN, workspace=scaling_plan.WORKSPACE,
                  unique_exceptions=scaling_plan.UNIQUE_EXCEPTIONS,
                  pk_exceptions=scaling_plan.PRIMARY_KEY_EXCEPTIONS,
                  fk_exceptions=scaling_plan.FOREIGN_KEY_EXCEPTIONS) -> list[str]:
    problems = []
    labels = {m._meta.label for m in all_models}
    problems += [f"{label}: not classified in contextstore/scaling_plan.py"
                 for label in sorted(labels - set(plan))]
    problems += [f"{label}: classified but no such model" for label in sorted(set(plan) - labels)]
    distributed = {label for label in labels if plan.get(label) == DISTRIBUTED}
    problems += [f"{label}: distributed, but WORKSPACE does not say where workspace_id comes from"
                 for label in sorted(distributed - set(workspace))]
    seen_unique, seen_pk, seen_fk = set(), set(), set()
    for model in all_models:
        label, meta = model._meta.label, model._meta
        kind = plan.get(label)
        if kind is None:
            continue
        if kind == DISTRIBUTED:
            has = any(f.name == "workspace" for f in meta.concrete_fields)
            if has != (workspace.get(label) == "has"):
                problems.append(f"{label}: WORKSPACE says {workspace.get(label)!r}, "
                                f"the model {'has' if has else 'has no'} workspace field")
            for key in unique_keys(model):
                if "workspace" in key:
                    continue
                if (label, key) in unique_exceptions:
                    seen_unique.add((label, key))
                else:
                    problems.append(f"{label}: unique {key} lacks workspace (Citus enforces it "
                                    "per shard only); include it or plan the change")
            if not isinstance(meta.pk, models.AutoField):
                if label in pk_exceptions:
                    seen_pk.add(label)
                else:
                    problems.append(f"{label}: primary key {meta.pk.name} is not the automatic "
                                    "id; plan it in PRIMARY_KEY_EXCEPTIONS")
        for field in meta.concrete_fields:
            if not field.is_relation or field.related_model is None:
                continue
            target = plan.get(field.related_model._meta.label)
            if (label, field.name) in fk_exceptions:
                seen_fk.add((label, field.name))
                continue
            if target == DISTRIBUTED and kind != DISTRIBUTED:
                problems.append(f"{label}.{field.name}: a {kind} table cannot point at a "
                                "distributed one")
            elif kind == DISTRIBUTED and target == LOCAL:
                problems.append(f"{label}.{field.name}: a distributed table cannot point at a "
                                "coordinator-local one")
            elif (kind == DISTRIBUTED and field.name == "workspace"
                  and field.remote_field.on_delete is models.SET_NULL):
                problems.append(f"{label}.workspace: SET_NULL would update the distribution column")
    problems += [f"{label}: unique {key} is listed as an exception but no longer exists"
                 for label, key in sorted(set(unique_exceptions) - seen_unique)]
    problems += [f"{label}: primary key exception no longer needed"
                 for label in sorted(set(pk_exceptions) - seen_pk)]
    problems += [f"{label}.{name}: foreign key exception no longer needed"
                 for label, name in sorted(set(fk_exceptions) - seen_fk)]
    return problems


def test_the_schema_fits_the_plan():
    assert plan_problems(concrete_models()) == []


def test_only_known_classes():
    assert set(PLAN.values()) <= {DISTRIBUTED, REFERENCE, LOCAL}
    assert set(scaling_plan.WORKSPACE) == {k for k, v in PLAN.items() if v == DISTRIBUTED}


def test_a_unique_key_without_workspace_blocks_the_plan():
    unplanned = {key: change for key, change in scaling_plan.UNIQUE_EXCEPTIONS.items()
                 if key[0] != "contextstore.Event"}
    problems = plan_problems(concrete_models(), unique_exceptions=unplanned)
    assert problems == [
        "contextstore.Event: unique ('thread', 'seq') lacks workspace (Citus enforces it per "
        "shard only); include it or plan the change",
        "contextstore.Event: unique ('thread', 'client_id') lacks workspace (Citus enforces it "
        "per shard only); include it or plan the change",
        "contextstore.Event: unique ('thread', 'item_key') lacks workspace (Citus enforces it "
        "per shard only); include it or plan the change",
    ]


def test_a_foreign_key_citus_refuses_blocks_the_plan():
    plan = {**PLAN, "contextstore.Membership": DISTRIBUTED, "contextstore.Workspace": DISTRIBUTED,
            "contextstore.ApiToken": DISTRIBUTED}
    workspace = {**scaling_plan.WORKSPACE, "contextstore.Membership": "has",
                 "contextstore.Workspace": "add via id", "contextstore.ApiToken": "has"}
    problems = plan_problems(concrete_models(), plan=plan, workspace=workspace,
                             fk_exceptions={})
    assert "contextstore.AuditLog.workspace: SET_NULL would update the distribution column" in problems
    assert any(p.startswith("contextstore.ApiToken: unique ('token_hash',)") for p in problems)


@isolate_apps("contextstore")
def test_a_new_table_blocks_the_plan_until_classified():
    class Scratch(models.Model):
        name = models.CharField(max_length=10, unique=True)

        class Meta:
            app_label = "contextstore"

        def __str__(self) -> str:
            return self.name

    assert plan_problems([*concrete_models(), Scratch]) == [
        "contextstore.Scratch: not classified in contextstore/scaling_plan.py"]
    plan = {**PLAN, "contextstore.Scratch": DISTRIBUTED}
    workspace = {**scaling_plan.WORKSPACE, "contextstore.Scratch": "add via nothing"}
    assert plan_problems([*concrete_models(), Scratch], plan=plan, workspace=workspace) == [
        "contextstore.Scratch: unique ('name',) lacks workspace (Citus enforces it per shard "
        "only); include it or plan the change"]


def test_the_doc_lists_every_table_with_its_class():
    rows = re.findall(r"^\| `([\w.]+)` \| (distributed|reference|local) \|", DOC.read_text(encoding="utf-8"),
                      flags=re.MULTILINE)
    assert dict(rows) == PLAN
    assert len(rows) == len(PLAN)


def test_the_doc_writes_down_every_planned_change():
    text = DOC.read_text(encoding="utf-8")
    missing = [change for change in [*scaling_plan.UNIQUE_EXCEPTIONS.values(),
                                     *scaling_plan.PRIMARY_KEY_EXCEPTIONS.values()]
               if change.split(";")[0].split(":")[0] not in text]
    assert missing == []
