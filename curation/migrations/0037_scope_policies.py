"""Review rules, holdout fractions and admission policies become kinds of one per-prefix setting, ScopePolicy.

Every ReviewRule, HoldoutFraction and AdmissionPolicy row is copied (its prefix, its value, when and by whom it
was last set, its version: an admission policy's own, otherwise the number of changes its history holds), and
every Event about one of them is pointed at its copy (`Event.scope_policy`, in place of the three links), so a
setting's history reads as before: the same actions, reasons, before and after. Then the three tables go.

On PostgreSQL the history is append-only (the `curation_event_append_only` trigger): the relinking runs with
that trigger off, in this migration's transaction, as the tables' owner; only the link column changes."""

import django.db.models.deletion
from django.db import migrations, models

import curation.rules.access
import curation.rules.clock

TRIGGER = "curation_event_append_only"

# kind, old model, old Event link, the old row's value
SOURCES = (
    ("review", "ReviewRule", "review_rule", lambda row: {"approvals": row.approvals}),
    ("holdout", "HoldoutFraction", "holdout", lambda row: {"fraction": row.fraction, "rules_only": row.rules_only}),
    (
        "admission",
        "AdmissionPolicy",
        "policy",
        lambda row: {"name": row.name, "mode": row.mode, "evaluator": row.evaluator, "threshold": row.threshold},
    ),
)


class _HistoryOpen:
    """The append-only trigger off for the relinking (PostgreSQL), in the migration's transaction."""

    def __init__(self, schema_editor):
        self.postgres = schema_editor.connection.vendor == "postgresql"
        self.cursor = schema_editor.connection.cursor()

    def __enter__(self):
        if self.postgres:
            # Fire the foreign keys' checks now: a table with pending trigger events cannot be altered back.
            self.cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            self.cursor.execute(f"ALTER TABLE curation_event DISABLE TRIGGER {TRIGGER}")
        return self

    def __exit__(self, *exc):
        if self.postgres:
            self.cursor.execute(f"ALTER TABLE curation_event ENABLE TRIGGER {TRIGGER}")
            self.cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        self.cursor.close()


def copy_into_scope_policies(apps, schema_editor):
    ScopePolicy = apps.get_model("curation", "ScopePolicy")
    Event = apps.get_model("curation", "Event")
    links = []
    for kind, model, link, value_of in SOURCES:
        for row in apps.get_model("curation", model).objects.order_by("pk"):
            history = Event.objects.filter(**{f"{link}_id": row.pk})
            last = history.order_by("-created_at", "-id").first()
            version = row.version if kind == "admission" else max(1, history.count())
            by = getattr(row, "updated_by_label", "") or (last.actor_label if last else "")
            copy = ScopePolicy.objects.create(
                kind=kind,
                prefix=row.prefix,
                value=value_of(row),
                version=version,
                updated_at=row.updated_at,
                updated_by_label=by,
            )
            links.append((link, row.pk, copy.pk))
    with _HistoryOpen(schema_editor):
        for link, old, new in links:
            Event.objects.filter(**{f"{link}_id": old}).update(scope_policy_id=new)


def copy_back(apps, schema_editor):
    """The reverse: each ScopePolicy back into its kind's table, and its Events linked to that row."""
    ScopePolicy = apps.get_model("curation", "ScopePolicy")
    Event = apps.get_model("curation", "Event")
    links = []
    for policy in ScopePolicy.objects.order_by("pk"):
        v, common = policy.value, {"prefix": policy.prefix, "updated_at": policy.updated_at}
        if policy.kind == "review":
            row = apps.get_model("curation", "ReviewRule").objects.create(approvals=v["approvals"], **common)
            link = "review_rule"
        elif policy.kind == "holdout":
            row = apps.get_model("curation", "HoldoutFraction").objects.create(
                fraction=v["fraction"], rules_only=v["rules_only"], updated_by_label=policy.updated_by_label, **common
            )
            link = "holdout"
        else:
            row = apps.get_model("curation", "AdmissionPolicy").objects.create(
                name=v["name"],
                mode=v["mode"],
                evaluator=v.get("evaluator", ""),
                threshold=v.get("threshold"),
                version=policy.version,
                **common,
            )
            link = "policy"
        links.append((link, policy.pk, row.pk))
    with _HistoryOpen(schema_editor):
        for link, new, old in links:
            Event.objects.filter(scope_policy_id=new).update(**{f"{link}_id": old})


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0036_lesson_lift"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScopePolicy",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("review", "two-reviewer rule"),
                            ("holdout", "holdout fraction"),
                            ("admission", "admission policy"),
                        ],
                        max_length=16,
                    ),
                ),
                ("prefix", models.CharField(max_length=255, validators=[curation.rules.access.clean_scope])),
                ("value", models.JSONField()),
                ("version", models.PositiveIntegerField(default=1)),
                ("updated_at", models.DateTimeField(default=curation.rules.clock.now)),
                ("updated_by_label", models.CharField(blank=True, max_length=150)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("kind", "prefix"), name="scope_policy_once_per_prefix"),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("kind", "review"), _negated=True),
                            ("value__approvals__in", [1, 2]),
                            _connector="OR",
                        ),
                        name="scope_policy_review_one_or_two",
                    ),
                ],
            },
        ),
        migrations.AddField(
            model_name="event",
            name="scope_policy",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="events",
                to="curation.scopepolicy",
            ),
        ),
        # The subject check names the old links; it comes back naming the new one once they are gone.
        migrations.RemoveConstraint(model_name="event", name="event_has_subject"),
        migrations.RunPython(copy_into_scope_policies, copy_back),
        migrations.RemoveIndex(model_name="event", name="event_review_rule_time_idx"),
        migrations.RemoveIndex(model_name="event", name="event_holdout_time_idx"),
        migrations.RemoveIndex(model_name="event", name="event_policy_time_idx"),
        migrations.RemoveField(model_name="event", name="review_rule"),
        migrations.RemoveField(model_name="event", name="holdout"),
        migrations.RemoveField(model_name="event", name="policy"),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(
                condition=models.Q(("scope_policy__isnull", False)),
                fields=["scope_policy", "created_at", "id"],
                name="event_scope_policy_time_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="event",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("entry__isnull", False),
                    ("conflict__isnull", False),
                    ("proposal__isnull", False),
                    ("skill__isnull", False),
                    ("token__isnull", False),
                    ("memory_version__isnull", False),
                    ("forget_request__isnull", False),
                    ("scope_policy__isnull", False),
                    _connector="OR",
                ),
                name="event_has_subject",
            ),
        ),
        migrations.DeleteModel(name="AdmissionPolicy"),
        migrations.DeleteModel(name="HoldoutFraction"),
        migrations.DeleteModel(name="ReviewRule"),
    ]
