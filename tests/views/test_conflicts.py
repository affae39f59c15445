"""The conflicts queue as each role sees it, through the real URL, middleware and templates."""

import datetime
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone

from curation import selectors, services
from curation.models import AgentToken, Conflict, Entry, Event, Feedback, Retrieval, RetrievedEntry, Status
from curation.services import conflicts
from tests.factories import active, candidate_data, client_for, make_user

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
REBASE = dict(trigger="Merging a feature branch into main", content="Always rebase before merging.", conditions=[])
NO_REBASE = dict(trigger="Merging feature branches into main", content="Never rebase shared branches.", conditions=[])


@pytest.fixture
def open_conflict(reviewer):
    def make(a_scope="acme/billing-api", b_scope="acme/billing-api/container", **a_fields):
        a = active(reviewer, scope=a_scope, **{**REBASE, **a_fields})
        b = active(reviewer, scope=b_scope, **NO_REBASE)
        [conflict] = [c for c in conflicts.detect_conflicts_for(b) if c.entry_a_id == a.pk]
        return conflict, a, b

    return make


def url(name, conflict):
    return reverse(f"curation:conflict-{name}", args=[conflict.pk])


def versions(a, b):
    return {"version_a": a.version, "version_b": b.version}


def test_the_queue_shows_both_entries_side_by_side(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    services.add_evidence(
        a.pk, data={"kind": "test_result", "signal": "external", "excerpt": "CI green after rebase"}, actor=reviewer
    )
    page = client_for(reviewer).get(reverse("curation:conflicts")).content.decode()
    assert f'id="conflict-{conflict.pk}"' in page and "1 open" in page
    for text in (
        a.scope,
        b.scope,
        a.trigger,
        b.trigger,
        a.content,
        b.content,
        a.boundary,
        "container",
        "config",
        "CI green after rebase",
        conflict.reason.replace('"', "&quot;"),
        "Recent outcomes",
        "none reported",
    ):
        assert text in page, text
    assert 'class="badge signal signal-external">external' in page  # a's evidence strength
    assert f"Keep #{a.pk}" in page and f"Keep #{b.pk}" in page and "Save the split" in page


def test_the_queue_page_runs_a_fixed_number_of_queries(open_conflict, reviewer, django_assert_max_num_queries):
    for i in range(6):
        a = active(reviewer, scope=f"acme/p{i}", **REBASE)
        b = active(reviewer, scope=f"acme/p{i}/x", **NO_REBASE)
        conflicts.detect_conflicts_for(b)
    client = client_for(reviewer)
    client.get(reverse("curation:conflicts"))  # warm the session and the user's permission cache
    # session, user, groups/permissions, scope grants, the reviewer's queue preference, then 4 of the
    # selector: the same for 1 or 6 conflicts
    with django_assert_max_num_queries(11):
        page = client.get(reverse("curation:conflicts")).content.decode()
    assert page.count('class="card conflict-card') == 6
    assert a and b


def test_auditor_reads_the_queue_without_actions(open_conflict, auditor):
    conflict, a, b = open_conflict()
    page = client_for(auditor).get(reverse("curation:conflicts")).content.decode()
    assert a.trigger in page and "Keep #" not in page and "Save the split" not in page


@pytest.mark.parametrize("action", ["keep", "split", "merge", "dismiss"])
def test_an_auditor_gets_403_on_every_resolution(open_conflict, auditor, action):
    conflict, a, b = open_conflict()
    response = client_for(auditor).post(url(action, conflict), {"keep": a.pk, **versions(a, b)})
    assert response.status_code == 403
    assert Conflict.objects.get(pk=conflict.pk).state == "open"


def test_roleless_and_anonymous_users(open_conflict, nobody, client):
    conflict, a, b = open_conflict()
    assert client_for(nobody).get(reverse("curation:conflicts")).status_code == 403
    response = client.post(url("dismiss", conflict), versions(a, b))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("action", ["keep", "split", "merge", "dismiss", "card"])
def test_a_reviewer_outside_the_scopes_gets_404(open_conflict, action):
    conflict, a, b = open_conflict()
    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    client = client_for(outsider)
    if action == "card":
        response = client.get(url("card", conflict))
    else:
        response = client.post(url(action, conflict), {"keep": a.pk, **versions(a, b)})
    assert response.status_code == 404
    assert conflict.reason not in client.get(reverse("curation:conflicts")).content.decode()


def test_a_scoped_reviewer_sees_only_pairs_wholly_in_scope(open_conflict, scoped_reviewer):
    inside, a, b = open_conflict()  # both under acme/billing-api
    straddling, *_ = open_conflict(a_scope="acme", b_scope="acme/billing-api/x", trigger="Merging a feature branch")
    page = client_for(scoped_reviewer).get(reverse("curation:conflicts")).content.decode()
    assert f'id="conflict-{inside.pk}"' in page and f'id="conflict-{straddling.pk}"' not in page


def test_keep_with_htmx_answers_the_decided_card_and_the_count(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    response = client_for(reviewer).post(url("keep", conflict), {"keep": b.pk, **versions(a, b)}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert f"Conflict #{conflict.pk}: kept #{b.pk}" in body and 'hx-swap-oob="true"' in body and "0 open" in body
    assert Entry.objects.get(pk=a.pk).status == Status.SUPERSEDED
    assert Event.objects.filter(entry=b, action="conflict_keep", actor=reviewer).exists()


def test_keep_without_javascript_redirects_back(open_conflict, lead):
    conflict, a, b = open_conflict()
    response = client_for(lead).post(
        url("keep", conflict), {"keep": a.pk, "next": "/review/conflicts/?kind=fact", **versions(a, b)}
    )
    assert response.status_code == 302 and response["Location"] == "/review/conflicts/?kind=fact"
    response = client_for(lead).post(url("dismiss", conflict), {"next": url("split", conflict), **versions(a, b)})
    assert response.status_code == 409  # already resolved; and an action URL is never a place to go back to


def test_split_through_the_form(open_conflict, lead):
    conflict, a, b = open_conflict(a_scope="acme/billing-api", b_scope="acme/billing-api")
    response = client_for(lead).post(
        url("split", conflict),
        {
            "a_scope": "acme/billing-api/host",
            "a_conditions": "",
            "b_scope": "acme/billing-api/container",
            "b_conditions": "",
            **versions(a, b),
        },
        **HTMX,
    )
    assert response.status_code == 200 and "split" in response.content.decode()
    assert Entry.objects.get(pk=a.pk).scope == "acme/billing-api/host"
    assert Entry.objects.get(pk=b.pk).scope == "acme/billing-api/container"


def test_a_split_that_still_overlaps_answers_422_with_the_form_kept(open_conflict, lead):
    conflict, a, b = open_conflict()
    response = client_for(lead).post(
        url("split", conflict),
        {
            "a_scope": "acme/billing-api/container",
            "a_conditions": "ci",
            "b_scope": b.scope,
            "b_conditions": "ci, docker",
            **versions(a, b),
        },
        **HTMX,
    )
    body = response.content.decode()
    assert response.status_code == 422
    assert (
        "Still overlapping" in body
        and 'value="ci, docker"' in body
        and "<details data-panel=\"split\" data-key=\"s\" open" in body
    )
    assert Conflict.objects.get(pk=conflict.pk).state == "open"


def test_bad_merge_fields_answer_422_per_field(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    response = client_for(reviewer).post(
        url("merge", conflict),
        {
            "merge_kind": "rumour",
            "merge_scope": "Acme",
            "merge_trigger": "",
            "merge_content": "x",
            "merge_boundary": "",
            "merge_conditions": "",
            "f-scope": "",
            "f-kind": "",
            **versions(a, b),
        },
        **HTMX,
    )
    body = response.content.decode()
    assert response.status_code == 422
    assert "One of:" in body and "Illegal scope segment" in body and "This field is required." in body
    assert Entry.objects.count() == 2


def test_merge_through_the_form(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    response = client_for(reviewer).post(
        url("merge", conflict),
        {
            "merge_kind": "procedure",
            "merge_scope": "acme/billing-api",
            "merge_trigger": "Merging into main",
            "merge_content": "Rebase feature branches; never rebase shared ones.",
            "merge_boundary": "",
            "merge_conditions": "git",
            "f-scope": "",
            "f-kind": "",
            "f-detected_by": "",  # the queue's filters, posted along (hx-include)
            **versions(a, b),
        },
        **HTMX,
    )
    assert response.status_code == 200
    merged = Entry.objects.get(supersedes=a)
    assert (merged.status, merged.kind, merged.conditions) == (Status.ACTIVE, "procedure", ["git"])
    assert f"New entry <a href=\"/entries/{merged.pk}/\">#{merged.pk}</a>" in response.content.decode()
    assert "Cannot be undone: the merge wrote a new entry" in response.content.decode()
    assert 'data-action="undo"' not in response.content.decode()


def test_a_stale_resolution_answers_409_and_shows_what_changed(open_conflict, reviewer, second_reviewer):
    conflict, a, b = open_conflict()
    conflicts.dismiss_conflict(conflict.pk, actor=second_reviewer, reason="different repos", **versions(a, b))
    response = client_for(reviewer).post(url("keep", conflict), {"keep": a.pk, **versions(a, b)}, **HTMX)
    assert response.status_code == 409
    assert "already dismissed" in response.content.decode() and "by rob" in response.content.decode()
    assert Entry.objects.get(pk=b.pk).status == Status.ACTIVE


def test_an_old_entry_version_answers_409(open_conflict, reviewer, second_reviewer):
    conflict, a, b = open_conflict()
    old = versions(a, b)
    conflicts.keep_entry(conflict.pk, actor=second_reviewer, keep=a.pk, **old)
    # a second conflict on the same kept entry, decided on versions loaded before the keep
    c = active(reviewer, scope="acme/billing-api/web", **NO_REBASE)
    [second] = conflicts.detect_conflicts_for(c)
    response = client_for(reviewer).post(
        url("dismiss", second), {"version_a": old["version_a"], "version_b": c.version}, **HTMX
    )
    assert response.status_code == 409 and "changed since you loaded it" in response.content.decode()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"version_a": "x", "version_b": "1"}, "missing the entries&#x27; versions"),
        ({"version_a": "1"}, "missing the entries&#x27; versions"),
    ],
)
def test_malformed_forms_answer_422(open_conflict, reviewer, data, message):
    conflict, a, b = open_conflict()
    response = client_for(reviewer).post(url("dismiss", conflict), data, **HTMX)
    assert response.status_code == 422 and message in response.content.decode()
    response = client_for(reviewer).post(url("keep", conflict), {"keep": "", **versions(a, b)}, **HTMX)
    assert response.status_code == 422 and "Say which entry to keep." in response.content.decode()


def test_filters_and_bad_filters(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    client = client_for(reviewer)
    assert (
        f'id="conflict-{conflict.pk}"'
        in client.get(reverse("curation:conflicts"), {"f-scope": "acme/billing-api/container"}).content.decode()
    )
    assert (
        f'id="conflict-{conflict.pk}"'
        not in client.get(reverse("curation:conflicts"), {"f-scope": "acme/web"}).content.decode()
    )
    assert (
        f'id="conflict-{conflict.pk}"'
        not in client.get(reverse("curation:conflicts"), {"f-detected_by": "sweep"}).content.decode()
    )
    assert client.get(reverse("curation:conflicts"), {"f-kind": "rumour"}).status_code == 400
    assert client.get(reverse("curation:conflicts"), {"after": "garbage"}).status_code == 400
    fragment = client.get(reverse("curation:conflicts"), {"f-scope": "acme"}, HTTP_HX_TARGET="queue", **HTMX)
    assert fragment.content.decode().lstrip().startswith('<section id="queue"')
    assert "HX-Request" in fragment["Vary"]


def test_keyset_pages(reviewer):
    for i in range(3):
        a = active(reviewer, scope=f"acme/p{i}", **REBASE)
        b = active(reviewer, scope=f"acme/p{i}/x", **NO_REBASE)
        conflicts.detect_conflicts_for(b)

    first = selectors.conflict_queue(reviewer, page_size=2)
    second = selectors.conflict_queue(reviewer, page_size=2, cursor=first.next_cursor)
    assert len(first.items) == 2 and len(second.items) == 1 and not second.next_cursor
    assert {c.pk for c in first.items}.isdisjoint({c.pk for c in second.items})
    assert first.count == 3 and a and b


def test_the_card_page_without_javascript(open_conflict, auditor):
    conflict, a, b = open_conflict()
    response = client_for(auditor).get(url("card", conflict))
    assert response.status_code == 200 and "back to the conflicts" in response.content.decode()


def test_recent_outcomes_are_the_last_five_reported_uses(open_conflict, reviewer, django_assert_max_num_queries):

    conflict, a, b = open_conflict()
    token = AgentToken.objects.create(name="ci", key_prefix="ci", key_hash="x" * 64, scopes=["acme"])
    now = timezone.now()
    for i, outcome in enumerate(["success"] * 4 + ["failure"] * 3):  # the last five: 2 successes, 3 failures
        at = now - datetime.timedelta(minutes=10 - i)
        retrieval = Retrieval.objects.create(
            id=uuid.uuid4(),
            token=token,
            scope="acme/billing-api",
            entry_ids=[a.pk],
            task_ref=f"task-{i}",
            created_at=at,
        )
        RetrievedEntry.objects.create(retrieval=retrieval, entry=a, rank=1, created_at=at)
        Feedback.objects.create(retrieval=retrieval, outcome=outcome, created_at=at)
    unreported = Retrieval.objects.create(id=uuid.uuid4(), token=token, scope="acme/billing-api", entry_ids=[a.pk])
    RetrievedEntry.objects.create(retrieval=unreported, entry=a, rank=1)

    with django_assert_max_num_queries(5):  # grants, page, evidence, outcomes, count
        page = selectors.conflict_queue(reviewer)
    [card] = page.items
    assert [u.retrieval.feedback.outcome for u in card.entry_a.recent_uses] == ["failure"] * 3 + ["success"] * 2
    assert card.entry_b.recent_uses == []
    html = client_for(reviewer).get(reverse("curation:conflicts")).content.decode()
    assert html.count("outcome-failure") == 3 and html.count("outcome-success") == 2


def test_bulk_dismiss(open_conflict, reviewer, second_reviewer):
    first, a, b = open_conflict()
    c = active(reviewer, scope="acme/billing-api/web", **NO_REBASE)
    [second] = conflicts.detect_conflicts_for(c)
    client = client_for(reviewer)
    page = client.get(reverse("curation:conflicts")).content.decode()
    assert 'id="bulk-form"' in page and f'value="{first.pk}:{a.version}:{b.version}"' in page
    conflicts.dismiss_conflict(second.pk, actor=second_reviewer, version_a=a.version, version_b=c.version)
    response = client.post(
        reverse("curation:conflicts-bulk"),
        {
            "selected": [f"{first.pk}:{a.version}:{b.version}", f"{second.pk}:{a.version}:{c.version}"],
            "reason": "different branches",
            "next": "/review/conflicts/",
        },
        follow=True,
    )
    body = response.content.decode()
    assert "Dismissed 1 of 2." in body and f"#{second.pk}: Conflict #{second.pk} was already dismissed" in body
    assert Conflict.objects.get(pk=first.pk).state == "dismissed"
    assert Event.objects.get(entry=b, action="conflict_dismissed").reason == "different branches"


@pytest.mark.parametrize("selected", [[], ["1:2"], ["x:1:1"]])
def test_bulk_refuses_malformed_selections(reviewer, selected):
    response = client_for(reviewer).post(reverse("curation:conflicts-bulk"), {"selected": selected}, follow=True)
    assert response.status_code == 200 and (
        "Select at least one" in response.content.decode() or "malformed" in response.content.decode()
    )


def test_bulk_is_for_reviewers(auditor):
    assert client_for(auditor).post(reverse("curation:conflicts-bulk"), {"selected": ["1:1:1"]}).status_code == 403


def test_signal_confidence_and_age_filters(open_conflict, reviewer):

    conflict, a, b = open_conflict()
    client = client_for(reviewer)
    shown = lambda **params: (
        f'id="conflict-{conflict.pk}"'
        in client.get(reverse("curation:conflicts"), {f"f-{k}": v for k, v in params.items()}).content.decode()
    )  # noqa: E731
    assert shown(signal="self") and not shown(signal="external")
    assert shown(max_confidence="0.7") and not shown(max_confidence="0.5")
    assert not shown(older_than_days="2")
    Conflict.objects.filter(pk=conflict.pk).update(created_at=conflict.created_at - datetime.timedelta(days=3))
    assert shown(older_than_days="2")
    for bad in ({"f-max_confidence": "2"}, {"f-older_than_days": "-1"}, {"f-signal": "gossip"}):
        assert client.get(reverse("curation:conflicts"), bad).status_code == 400


def test_the_merge_form_starts_from_a_real_merge_and_says_what_came_from_where(open_conflict, reviewer):
    conflict, a, b = open_conflict()
    page = client_for(reviewer).get(reverse("curation:conflict-card", args=[conflict.pk]), **HTMX).content.decode()
    assert "(the better supported); added from #" in page and "Keywords and boundaries from both." in page
    from django.utils.html import escape

    merge_text = page.split('name="merge_content"')[1].split("</textarea>")[0].split(">", 1)[1]
    assert merge_text.startswith((escape(a.content), escape(b.content)))  # the better-supported text, whole
    assert f"{escape(a.content)}\n{escape(b.content)}" not in merge_text  # not both pasted together


@pytest.mark.parametrize("decision", ["dismiss", "keep"])
def test_undo_a_dismissal_or_a_keep_from_the_decided_card(open_conflict, reviewer, decision):
    conflict, a, b = open_conflict()
    client = client_for(reviewer)
    fields = {"keep": a.pk} if decision == "keep" else {}
    body = client.post(url(decision, conflict), {**fields, **versions(a, b)}, **HTMX).content.decode()
    assert "0 open" in body and f'action="{url("undo", conflict)}"' in body and "Undo <kbd>z</kbd>" in body
    a1, b1 = Entry.objects.get(pk=a.pk), Entry.objects.get(pk=b.pk)
    assert f'name="version_a" value="{a1.version}"' in body and f'name="version_b" value="{b1.version}"' in body

    response = client.post(url("undo", conflict), versions(a1, b1), **HTMX)
    body = response.content.decode()
    assert response.status_code == 200
    assert f"Undone: Conflict #{conflict.pk} is back in the queue." in body and "1 open" in body
    assert 'data-key="n"' in body  # open for a decision again
    assert Conflict.objects.get(pk=conflict.pk).state == Conflict.State.OPEN
    assert Entry.objects.get(pk=a.pk).status == Entry.objects.get(pk=b.pk).status == Status.ACTIVE
    again = client.post(url("undo", conflict), versions(a1, b1), **HTMX)
    assert again.status_code == 409 and "there is no decision to undo" in again.content.decode()


# --- the conflicts one entry raised: one card ---------------------------------------------------------------


@pytest.fixture
def flooded(reviewer):
    """Three near-identical lessons, and a candidate contradicting each: three conflicts, one card."""
    existing = [active(reviewer, scope=f"acme/billing-api/p{i}", **REBASE) for i in range(3)]
    new = services.create_candidate(data=candidate_data(scope="acme/billing-api", **NO_REBASE), actor_label="agent:ci")
    opened = conflicts.detect_conflicts_for(new)
    return new, existing, opened


def members_of(opened):
    rows = Conflict.objects.filter(pk__in=[c.pk for c in opened]).select_related("entry_a", "entry_b")
    return [f"{c.pk}:{c.entry_a.version}:{c.entry_b.version}" for c in rows]


def test_one_candidates_conflicts_are_one_card(flooded, reviewer):
    new, existing, opened = flooded
    page = client_for(reviewer).get(reverse("curation:conflicts")).content.decode()
    assert page.count('class="card conflict-card') == 1 and "3 open" in page
    assert f"Conflicts #{opened[0].pk} and 2 more" in page and f"#{new.pk} contradicts 3 lessons" in page
    for conflict in opened[1:]:
        assert f'id="conflict-{conflict.pk}"' not in page  # no card of its own
        assert reverse("curation:conflict-card", args=[conflict.pk]) in page  # decided alone from its page
    for entry in existing:
        assert f'id="group-{opened[0].pk}-other-{entry.pk}"' in page
    assert f"Keep #{new.pk}, supersede the 3 others" in page and f"Keep the 3 others, supersede #{new.pk}" in page
    assert "Dismiss all 3" in page


def test_the_queue_page_with_groups_runs_a_fixed_number_of_queries(reviewer, django_assert_max_num_queries):
    for group in range(3):
        for i in range(3):
            active(reviewer, scope=f"acme/g{group}/p{i}", **REBASE)
        new = services.create_candidate(
            data=candidate_data(scope=f"acme/g{group}", **NO_REBASE), actor_label="agent:ci"
        )
        conflicts.detect_conflicts_for(new)
    client = client_for(reviewer)
    client.get(reverse("curation:conflicts"))
    with django_assert_max_num_queries(12):  # one more than a page of lone conflicts: the groups' rest
        page = client.get(reverse("curation:conflicts")).content.decode()
    assert page.count('class="card conflict-card') == 3 and "9 open" in page


@pytest.mark.parametrize(
    "post, new_status, existing_status",
    [
        ({"keep": "new"}, Status.ACTIVE, Status.SUPERSEDED),
        ({"keep": "existing"}, Status.SUPERSEDED, Status.ACTIVE),
    ],
)
def test_a_card_of_several_is_kept_at_once_and_undone_at_once(flooded, reviewer, post, new_status, existing_status):
    new, existing, opened = flooded
    client = client_for(reviewer)
    response = client.post(
        reverse("curation:conflict-group-keep", args=[opened[0].pk]), {**post, "members": members_of(opened)}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert f"Conflicts #{opened[0].pk} and 2 more: kept" in body and "0 open" in body and "Undo all 3" in body
    assert Entry.objects.get(pk=new.pk).status == new_status
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {existing_status}
    assert not Conflict.objects.filter(pk__in=[c.pk for c in opened], state="open").exists()

    undo = client.post(
        reverse("curation:conflict-group-undo", args=[opened[0].pk]), {"members": members_of(opened)}, **HTMX
    )
    body = undo.content.decode()
    assert undo.status_code == 200 and "3 open" in body and f"Conflicts #{opened[0].pk} and 2 more" in body
    assert Entry.objects.get(pk=new.pk).status == Status.PENDING
    assert {Entry.objects.get(pk=e.pk).status for e in existing} == {Status.ACTIVE}
    assert Conflict.objects.filter(pk__in=[c.pk for c in opened], state="open").count() == 3


def test_dismiss_all_without_javascript_redirects_back(flooded, reviewer):
    new, existing, opened = flooded
    response = client_for(reviewer).post(
        reverse("curation:conflict-group-dismiss", args=[opened[0].pk]),
        {"members": members_of(opened), "reason": "different branches", "next": "/review/conflicts/"},
    )
    assert response.status_code == 302 and response["Location"] == "/review/conflicts/"
    assert set(Conflict.objects.filter(pk__in=[c.pk for c in opened]).values_list("state", flat=True)) == {"dismissed"}


def test_a_card_decided_meanwhile_answers_409_with_what_is_left(flooded, reviewer, second_reviewer):
    new, existing, opened = flooded
    sent = members_of(opened)
    a, b = Entry.objects.get(pk=opened[2].entry_a_id), Entry.objects.get(pk=opened[2].entry_b_id)
    conflicts.dismiss_conflict(opened[2].pk, actor=second_reviewer, **versions(a, b))
    response = client_for(reviewer).post(
        reverse("curation:conflict-group-keep", args=[opened[0].pk]), {"keep": "new", "members": sent}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 409 and f"Conflict #{opened[2].pk} was already dismissed" in body
    assert f"Conflicts #{opened[0].pk} and 1 more" in body  # the card again, with the two still open
    assert Entry.objects.get(pk=new.pk).status == Status.PENDING


@pytest.mark.parametrize(
    "data, message",
    [
        ({"keep": "new", "members": ["1:2"]}, "is malformed"),
        ({"keep": "both"}, "Say which side to keep"),
        ({"keep": "new"}, "The card&#x27;s conflicts are missing"),
    ],
)
def test_malformed_card_forms_answer_422(flooded, reviewer, data, message):
    new, existing, opened = flooded
    response = client_for(reviewer).post(reverse("curation:conflict-group-keep", args=[opened[0].pk]), data, **HTMX)
    assert response.status_code == 422 and message in response.content.decode()
    assert Conflict.objects.filter(state="open").count() == 3


def test_a_card_of_several_is_for_reviewers_in_its_scopes(flooded, auditor):
    new, existing, opened = flooded
    data = {"keep": "new", "members": members_of(opened)}
    assert (
        client_for(auditor).post(reverse("curation:conflict-group-keep", args=[opened[0].pk]), data).status_code == 403
    )
    outsider = make_user("wes", "reviewer", scopes=["acme/web"])
    response = client_for(outsider).post(reverse("curation:conflict-group-keep", args=[opened[0].pk]), data)
    assert response.status_code == 404
    assert Conflict.objects.filter(state="open").count() == 3
