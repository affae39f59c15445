"""Migration 0037 on a database with review rules, holdout fractions and admission policies set by leads, and
their histories: each becomes a ScopePolicy with the same prefix and value, its Events point at it (the same
actions, reasons, before and after), and what the readers resolve is what it was. Back, and it is as it was."""

import datetime

import pytest
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("migrates_back")]

BEFORE, AFTER = [("curation", "0036_lesson_lift")], [("curation", "0037_scope_policies")]
AT = datetime.datetime(2026, 11, 20, 12, tzinfo=datetime.timezone.utc)


def _old_world(apps):
    User, Event = apps.get_model("auth", "User"), apps.get_model("curation", "Event")
    lena = User.objects.create(username="lena")
    rule = apps.get_model("curation", "ReviewRule").objects.create(
        prefix="acme/billing-api", approvals=1, updated_at=AT
    )
    holdout = apps.get_model("curation", "HoldoutFraction").objects.create(
        prefix="acme", fraction=0.1, rules_only=0.2, updated_at=AT, updated_by_label="lena"
    )
    policy = apps.get_model("curation", "AdmissionPolicy").objects.create(
        prefix="acme/ops", name="ci-gate", mode="auto", evaluator="ci", threshold=0.8, version=3, updated_at=AT
    )

    def event(link, subject, action, before, after, reason, minutes):
        Event.objects.create(
            **{link: subject},
            entry_label=f"label of {subject.prefix}",
            actor=lena,
            actor_label="lena",
            action=action,
            reason=reason,
            before=before,
            after=after,
            created_at=AT + datetime.timedelta(minutes=minutes),
        )

    event("review_rule", rule, "review_rule_set", None, {"prefix": "acme/billing-api", "approvals": 2}, "money", 0)
    event(
        "review_rule",
        rule,
        "review_rule_set",
        {"prefix": "acme/billing-api", "approvals": 2},
        {"prefix": "acme/billing-api", "approvals": 1},
        "",
        1,
    )
    event(
        "holdout",
        holdout,
        "holdout_set",
        None,
        {"prefix": "acme", "fraction": 0.1, "rules_only": 0.2},
        "holdout of acme set to 10%",
        2,
    )
    event(
        "policy",
        policy,
        "admission_policy_set",
        None,
        {"prefix": "acme/ops", "mode": "auto", "version": 3},
        "acme/ops: auto",
        3,
    )


def test_every_setting_and_its_history_is_carried_into_scope_policies_and_back():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    _old_world(executor.loader.project_state(BEFORE).apps)
    histories_before = sorted(
        executor.loader.project_state(BEFORE)
        .apps.get_model("curation", "Event")
        .objects.values_list("action", "reason", "before", "after", "entry_label", "actor_label", "created_at")
    )

    after = MigrationExecutor(connection)
    after.migrate(AFTER)
    apps = after.loader.project_state(AFTER).apps
    ScopePolicy, Event = apps.get_model("curation", "ScopePolicy"), apps.get_model("curation", "Event")
    rows = {p.kind: p for p in ScopePolicy.objects.all()}
    assert set(rows) == {"review", "holdout", "admission"}
    review, holdout, admission = rows["review"], rows["holdout"], rows["admission"]
    assert (review.prefix, review.value, review.version, review.updated_at, review.updated_by_label) == (
        "acme/billing-api",
        {"approvals": 1},
        2,
        AT,
        "lena",
    )  # two changes in its history; the last by lena
    assert (holdout.prefix, holdout.value, holdout.version, holdout.updated_by_label) == (
        "acme",
        {"fraction": 0.1, "rules_only": 0.2},
        1,
        "lena",
    )
    assert (admission.prefix, admission.value, admission.version) == (
        "acme/ops",
        {"name": "ci-gate", "mode": "auto", "evaluator": "ci", "threshold": 0.8},
        3,
    )
    assert list(Event.objects.filter(scope_policy=review).order_by("created_at").values_list("reason", flat=True)) == [
        "money",
        "",
    ]
    assert Event.objects.get(scope_policy=holdout).action == "holdout_set"
    assert Event.objects.get(scope_policy=admission).action == "admission_policy_set"
    assert not Event.objects.filter(scope_policy__isnull=True).exists()
    assert (
        sorted(
            Event.objects.values_list("action", "reason", "before", "after", "entry_label", "actor_label", "created_at")
        )
        == histories_before
    )
    if connection.vendor == "postgresql":  # the history is append-only again once the links are moved
        with pytest.raises(DatabaseError, match="append-only"):
            Event.objects.filter(scope_policy=review).update(reason="rewritten")

    back = MigrationExecutor(connection)
    back.migrate(BEFORE)
    old = back.loader.project_state(BEFORE).apps
    rule = old.get_model("curation", "ReviewRule").objects.get()
    assert (rule.prefix, rule.approvals) == ("acme/billing-api", 1)
    assert old.get_model("curation", "HoldoutFraction").objects.get().rules_only == 0.2
    assert old.get_model("curation", "AdmissionPolicy").objects.get().version == 3
    assert old.get_model("curation", "Event").objects.filter(review_rule=rule).count() == 2
