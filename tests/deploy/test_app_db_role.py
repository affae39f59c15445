"""The application's database role (PostgreSQL): connected as it, the web server and the workers can do
their work, and none of the ways to erase or silence the audit trail is open to them."""

import psycopg
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from curation import services
from curation.infra import db_roles
from curation.models import Entry, Event, Status
from curation.sweeps import run_sweep
from tests.factories import candidate_data, make_user

APP_ROLE = "memoryadmin_test_app"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def app_role(on_postgres):
    """The role as the deployment makes it (LOGIN, owns nothing, no superuser), granted its rights by the
    same code `migrate` runs."""
    with connection.cursor() as cursor:
        cursor.execute(f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
            END IF; END $$""")
    db_roles.grant_to_app_role(connection, APP_ROLE)
    yield APP_ROLE
    # A role is the whole cluster's: the suite leaves none behind (unless another database still grants it
    # something, a run of the suite beside this one: that run drops it).
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {APP_ROLE}")
        try:
            with transaction.atomic():
                cursor.execute(f"DROP ROLE IF EXISTS {APP_ROLE}")
        except DatabaseError:
            pass


@pytest.fixture
def as_app(app_role):
    s = connection.settings_dict
    with psycopg.connect(
        dbname=s["NAME"], user=app_role, host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, autocommit=True
    ) as conn:
        yield conn


@pytest.fixture
def some_history(db):
    entry = services.create_candidate(data=candidate_data(), evidence=[], actor_label="agent:ci")
    return entry


@pytest.mark.parametrize(
    "statement, refusal",
    [
        ("TRUNCATE curation_event", "permission denied"),
        ("TRUNCATE curation_evidence", "permission denied"),
        ("TRUNCATE curation_skilltrial", "permission denied"),
        ("TRUNCATE curation_entry CASCADE", "permission denied"),
        ("ALTER TABLE curation_event DISABLE TRIGGER ALL", "must be owner"),
        ("ALTER TABLE curation_evidence DISABLE TRIGGER curation_evidence_append_only", "must be owner"),
        ("SET session_replication_role = replica", "permission denied"),
        ("UPDATE curation_event SET reason = 'rewritten'", "permission denied"),
        ("DELETE FROM curation_event", "permission denied"),
        ("DELETE FROM curation_evidence", "permission denied"),
        ("UPDATE curation_skilltrial SET notes = ''", "permission denied"),
        ("DROP TABLE curation_event", "must be owner"),
        ("CREATE TABLE curation_shadow (id int)", "permission denied"),
        (
            "CREATE TRIGGER t BEFORE INSERT ON curation_event FOR EACH ROW EXECUTE FUNCTION curation_refuse_change()",
            "permission denied",
        ),
    ],
)
def test_each_way_around_the_audit_trail_is_refused(as_app, some_history, statement, refusal):
    events = Event.objects.count()
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match=refusal):
        as_app.execute(statement)
    assert Event.objects.count() == events > 0


def test_the_app_role_does_the_work_of_the_web_server_and_the_workers(app_role, settings):
    """Switch Django's own connection to the role, then take a lesson through its life: submission,
    review, a sweep. Every table these touch is granted; the history is appended to."""
    lead = make_user("lena", "lead")
    owner = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = app_role
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user")
            assert cursor.fetchone()[0] == app_role
        entry = services.create_candidate(data=candidate_data(), evidence=[], actor_label="agent:ci")
        services.approve_candidate(entry.pk, actor=lead, expected_version=entry.version)
        run, _ = run_sweep("decay")
        assert run.state == "succeeded"
        assert Entry.objects.get(pk=entry.pk).status == Status.ACTIVE
        assert Event.objects.filter(entry_id=entry.pk).count() == 2
    finally:
        connection.close()
        connection.settings_dict["USER"] = owner


def test_migrate_grants_the_role_named_in_the_settings(app_role, settings):
    with connection.cursor() as cursor:
        cursor.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {app_role}")
    settings.APP_DB_ROLE = app_role
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege(%s, 'curation_entry', 'UPDATE'),"
            " has_table_privilege(%s, 'curation_event', 'INSERT'),"
            " has_table_privilege(%s, 'curation_event', 'UPDATE'),"
            " has_table_privilege(%s, 'curation_event', 'TRUNCATE')",
            [app_role] * 4,
        )
        assert cursor.fetchone() == (True, True, False, False)


def test_grants_name_every_table_and_only_append_to_the_history():
    statements = db_roles.grant_statements("app", ["curation_entry", "curation_event", "django_session"])
    assert 'GRANT SELECT, INSERT ON "curation_event" TO "app"' in statements
    assert 'GRANT SELECT, INSERT, UPDATE, DELETE ON "curation_entry" TO "app"' in statements
    assert 'GRANT SELECT, INSERT ON "curation_tombstone" TO "app"' in db_roles.grant_statements(
        "app", ["curation_tombstone"]
    )
    assert db_roles.grant_statements("app", [], ["curation_forget_purge(bigint, text[])"])[-1] == (
        'GRANT EXECUTE ON FUNCTION curation_forget_purge(bigint, text[]) TO "app"'
    )
    assert not any("TRUNCATE" in s or "TRIGGER" in s for s in statements)


def test_the_app_role_forgets_through_the_purge_function_only(app_role, as_app):
    """As the application role: a forget's purge rewrites the history's text (through the SECURITY DEFINER
    function, the one way), and the same role's plain UPDATE of an Event is still refused."""
    from curation.services.forgets import approve_forget_request, file_forget_request

    lead = make_user("lena", "lead")
    owner = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = app_role
    try:
        entry = services.create_candidate(
            data=candidate_data(content="Ask Marguerite Okonkwo for the keys first."),
            evidence=[],
            actor_label="agent:ci",
        )
        request = file_forget_request(entry_id=entry.pk, reason="the user asked", actor=lead)
        approve_forget_request(request.pk, actor=lead)
        assert all("Okonkwo" not in str(e.after) for e in Event.objects.filter(entry_id=entry.pk))
        assert Event.objects.filter(forget_request=request, action="forget_purge").exists()
    finally:
        connection.close()
        connection.settings_dict["USER"] = owner
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
        as_app.execute("UPDATE curation_event SET reason = 'rewritten'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_app.execute(
            "SELECT set_config('memoryadmin.forget_purge', '1', false); UPDATE curation_evidence SET excerpt = 'x'"
        )


def test_the_app_role_withdraws_a_skill_made_of_a_forgotten_entry_through_its_function_only(app_role, as_app):
    """As the application role: forgetting a skill's source rewrites the skill's Events (the SECURITY DEFINER
    curation_forget_skill), and that function refuses a skill none of whose sources a request forgot."""
    from curation.models import SkillProposal
    from curation.services.forgets import approve_forget_request, file_forget_request
    from tests.factories import nominated

    lead = make_user("lena", "lead")
    skill, other = (
        nominated(),
        nominated(
            scope="acme/billing-api",
            trigger="Rotating the webhook signing key",
            content="Deploy the new key first.\nRollback: restore the old key.",
        ),
    )
    owner = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = app_role
    try:
        request = file_forget_request(entry_id=skill.nominated_entry_id, reason="the user asked", actor=lead)
        approve_forget_request(request.pk, actor=lead)
        assert SkillProposal.objects.get(pk=skill.pk).slug == f"withdrawn-skill-{skill.pk}"
        assert all("/srv/app" not in str(e.after) for e in Event.objects.filter(skill_id=skill.pk))
    finally:
        connection.close()
        connection.settings_dict["USER"] = owner
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="nothing is purged"):
        as_app.execute("SELECT curation_forget_skill(%s, %s, %s, %s)", [request.pk, other.pk, [], ["Deploy"]])
