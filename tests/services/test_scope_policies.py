"""The settings per scope prefix as one thing: every kind (two-reviewer rule, holdout, admission policy) is
refused the same way, written the same way (a ScopePolicy row, its version, one Event of the same shape), read
by the same resolution over the server's settings; and a lead who makes a two-reviewer rule and an automatic
admission policy govern the same scopes is told that the two-reviewer rule wins, on the page and in the Event."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from curation.models import Event, EventAction, ScopePolicy
from curation.rules.scope_policies import ADMISSION, HOLDOUT, REVIEW
from curation.selectors import admission_policies, approvals_required, holdout_fractions, review_rules
from curation.services.scope_policies import set_scope_policy
from tests.factories import client_for, make_user, page_text

pytestmark = pytest.mark.django_db

VALID = {
    REVIEW: {"approvals": 2},
    HOLDOUT: {"fraction": 0.1, "rules_only": 0.0},
    ADMISSION: {"name": "ci-gate", "mode": "auto", "evaluator": "ci", "threshold": 0.8},
}
ACTIONS = {
    REVIEW: EventAction.REVIEW_RULE_SET,
    HOLDOUT: EventAction.HOLDOUT_SET,
    ADMISSION: EventAction.ADMISSION_POLICY_SET,
}
TWO_REVIEWERS_WIN = "the two-reviewer rule wins"


def put(kind, prefix, actor, reason="", **value):
    return set_scope_policy(kind, data={"prefix": prefix, **(value or VALID[kind])}, actor=actor, reason=reason)


@pytest.mark.parametrize("kind", [REVIEW, HOLDOUT, ADMISSION])
def test_every_kind_is_written_the_same_way_with_one_event_shape(kind, lead):
    first = put(kind, "acme/billing-api", lead, reason="why not")
    assert first.changed and first.policy.version == 1
    row = ScopePolicy.objects.get()
    assert (row.kind, row.prefix, row.value, row.updated_by_label) == (kind, "acme/billing-api", VALID[kind], "lena")
    [event] = Event.objects.filter(scope_policy=row)
    assert (event.action, event.actor, event.reason, event.before, event.after, event.entry_label) == (
        ACTIONS[kind],
        lead,
        "why not",
        None,
        {"prefix": "acme/billing-api", **VALID[kind], "version": 1},
        f"{row.get_kind_display()} of acme/billing-api",
    )

    again = put(kind, "acme/billing-api", lead)  # the value it already has: nothing to record
    assert not again.changed and Event.objects.filter(scope_policy=row).count() == 1

    changed = {
        REVIEW: {"approvals": 1},
        HOLDOUT: {"fraction": 0.2, "rules_only": 0.1},
        ADMISSION: {"name": "ci-gate", "mode": "manual", "evaluator": "", "threshold": None},
    }[kind]
    put(kind, "acme/billing-api", lead, **changed)
    last = Event.objects.filter(scope_policy=row).order_by("-id").first()
    assert (last.before, last.after) == (
        {"prefix": "acme/billing-api", **VALID[kind], "version": 1},
        {"prefix": "acme/billing-api", **changed, "version": 2},
    )
    assert last.reason  # without the lead's words, the setting in words
    assert ScopePolicy.objects.get().version == 2


@pytest.mark.parametrize("kind", [REVIEW, HOLDOUT, ADMISSION])
def test_every_kind_is_refused_the_same_way(kind, lead, reviewer):
    with pytest.raises(PermissionDenied, match="Only a lead"):
        put(kind, "acme", reviewer)
    scoped = make_user("lou", "lead", scopes=["globex"])
    with pytest.raises(PermissionDenied, match="within your scopes; acme is outside them"):
        put(kind, "acme", scoped)
    for bad_prefix in ("", "Acme Web", "acme/../x", None):
        with pytest.raises(ValidationError) as caught:
            put(kind, bad_prefix, lead)
        assert list(caught.value.message_dict) == ["prefix"]
    with pytest.raises(ValidationError):
        set_scope_policy("budget", data={"prefix": "acme"}, actor=lead)
    assert not ScopePolicy.objects.exists() and not Event.objects.filter(scope_policy__isnull=False).exists()


@pytest.mark.parametrize(
    "kind, data, fields",
    [
        (REVIEW, {"approvals": 3}, ["approvals"]),
        (REVIEW, {"approvals": True}, ["approvals"]),
        (HOLDOUT, {"fraction": "lots", "rules_only": "-1"}, ["fraction", "rules_only"]),
        (HOLDOUT, {"fraction": 0.3, "rules_only": 0.3}, ["rules_only"]),
        (ADMISSION, {"name": "Bad Name", "mode": "some"}, ["mode", "name"]),
        (ADMISSION, {"name": "a", "mode": "auto"}, ["evaluator", "threshold"]),
    ],
)
def test_a_bad_value_names_each_bad_field_with_a_bad_prefix_too(kind, data, fields, lead):
    with pytest.raises(ValidationError) as caught:
        set_scope_policy(kind, data={"prefix": "Acme Web", **data}, actor=lead)
    assert sorted(caught.value.message_dict) == sorted(["prefix", *fields])
    assert not ScopePolicy.objects.exists()


def test_the_readers_resolve_the_longest_prefix_over_the_settings(lead, settings):
    settings.CURATION = {**settings.CURATION, "TWO_REVIEWER_SCOPES": ["acme", "globex/"]}
    settings.CURATION_EVALUATION = {**settings.CURATION_EVALUATION, "HOLDOUT_FRACTIONS": {"acme": 0.3}}
    settings.CURATION_ADMISSION = {"acme": {"name": "take-all", "mode": "all"}}
    put(REVIEW, "acme/sandbox", lead, approvals=1)
    put(REVIEW, "globex", lead, approvals=1)  # a lead's row replaces the setting of its prefix
    put(HOLDOUT, "acme/web", lead, fraction=0.1, rules_only=0.2)
    put(ADMISSION, "acme/ops", lead, **VALID[ADMISSION])
    assert review_rules() == {"acme": 2, "acme/sandbox": 1, "globex": 1}
    assert [approvals_required(s) for s in ("acme/web", "acme/sandbox/ci", "acme-other", "globex/x")] == [2, 1, 1, 1]
    assert holdout_fractions() == {"acme": (0.3, 0.0), "acme/web": (0.1, 0.2)}
    assert [(p.prefix, p.name, p.mode) for p in admission_policies()] == [
        ("acme", "take-all", "all"),
        ("acme/ops", "ci-gate", "auto"),
    ]


# --- a two-reviewer rule and an automatic admission policy over the same scopes ------------------------------


def test_an_automatic_policy_under_a_two_reviewer_rule_is_told_the_rule_wins(lead):
    assert put(REVIEW, "acme", lead).warnings == ()
    answer = put(ADMISSION, "acme/billing-api", lead, name="open", mode="all")
    [warning] = answer.warnings
    assert "Candidates under acme need two reviewers" in warning and "policy:open (all) of acme/billing-api" in warning
    assert TWO_REVIEWERS_WIN in warning and "automatic rejections still reject" in warning
    event = Event.objects.get(scope_policy=answer.policy)
    assert (
        event.reason
        == f"Candidates under acme/billing-api: all: approve every new candidate (signed policy:open). {warning}"
    )


def test_a_two_reviewer_rule_where_an_automatic_policy_governs_is_told_too(lead):
    put(ADMISSION, "acme", lead)  # auto, over all of acme
    answer = put(REVIEW, "acme/billing-api", lead, reason="money")
    [warning] = answer.warnings
    assert (
        "Candidates under acme/billing-api need two reviewers" in warning and "policy:ci-gate (auto) of acme" in warning
    )
    assert Event.objects.get(scope_policy=answer.policy).reason == f"money {warning}"
    # A policy set below the rule, and one above it, are both where the rule governs.
    assert put(ADMISSION, "acme/billing-api/ci", lead, name="ci", mode="all").warnings


@pytest.mark.parametrize(
    "setup, kind, prefix, value",
    [
        ([(REVIEW, "acme", {"approvals": 2})], ADMISSION, "acme", {"name": "people", "mode": "manual"}),
        ([(REVIEW, "acme", {"approvals": 2})], ADMISSION, "acme", {"name": "frozen", "mode": "none"}),  # rejects only
        ([(ADMISSION, "acme", VALID[ADMISSION])], REVIEW, "acme", {"approvals": 1}),
        (
            [(REVIEW, "acme", {"approvals": 2}), (REVIEW, "acme/sandbox", {"approvals": 1})],
            ADMISSION,
            "acme/sandbox",
            {"name": "open", "mode": "all"},
        ),  # one reviewer there: nothing meets
        ([(REVIEW, "globex", {"approvals": 2})], ADMISSION, "acme", {"name": "open", "mode": "all"}),
        (
            [(ADMISSION, "acme", VALID[ADMISSION]), (ADMISSION, "acme/billing-api", {"name": "p", "mode": "manual"})],
            REVIEW,
            "acme/billing-api",
            {"approvals": 2},
        ),  # people decide there
        ([(REVIEW, "acme", {"approvals": 2})], HOLDOUT, "acme", {"fraction": 0.1}),
    ],
)
def test_no_warning_where_they_do_not_meet(lead, setup, kind, prefix, value):
    for k, p, v in setup:
        put(k, p, lead, **v)
    answer = put(kind, prefix, lead, **value)
    assert answer.warnings == ()
    assert TWO_REVIEWERS_WIN not in Event.objects.filter(scope_policy=answer.policy).get().reason


def test_the_servers_two_reviewer_setting_counts(lead, settings):
    settings.CURATION = {**settings.CURATION, "TWO_REVIEWER_SCOPES": ["acme/billing-api"]}
    [warning] = put(ADMISSION, "acme", lead, name="open", mode="all").warnings
    assert "Candidates under acme/billing-api need two reviewers" in warning


def test_the_page_shows_the_warning_after_saving_and_lists_where_they_meet(lead):
    client = client_for(lead)
    client.post("/policies/review/", {"prefix": "acme", "approvals": "2"})
    response = client.post("/policies/admission/", {"prefix": "acme/ops", "name": "open", "mode": "all"}, follow=True)
    text = page_text(response)
    assert response.redirect_chain == [("/policies/#admission", 302)]
    assert '<p class="flash success" role="status">Candidates under acme/ops: all: approve every new candidate' in text
    warning = text.split('<p class="flash warning" role="status">')[1].split("</p>")[0]
    assert "Candidates under acme need two reviewers" in warning and TWO_REVIEWERS_WIN in warning
    meets = text.split('id="precedence"')[1].split("</section>")[0]
    assert "policy:open (all) of acme/ops" in meets
    history = text.split('id="history"')[1].split("</section>")[0]
    assert "admission policy set" in history and TWO_REVIEWERS_WIN in history and "approvals required set" in history
    same = client.post("/policies/review/", {"prefix": "acme", "approvals": "2"}, follow=True)
    assert "acme already had this setting: nothing changed." in page_text(same)


def test_an_unknown_kind_is_404_and_the_page_reads_a_fixed_number_of_queries(lead, django_assert_num_queries):
    assert client_for(lead).post("/policies/budget/", {"prefix": "acme"}).status_code == 404
    client = client_for(lead)
    client.get("/policies/")
    for i in range(5):
        put(REVIEW, f"acme/team-{i}", lead)
        put(HOLDOUT, f"acme/team-{i}", lead)
        put(ADMISSION, f"acme/team-{i}", lead, name=f"p{i}", mode="none")
    # session, user, its two permission reads, the policies, its scopes, the history, its groups (the header)
    with django_assert_num_queries(8):
        text = page_text(client.get("/policies/"))
    assert text.count("acme/team-4") >= 3
