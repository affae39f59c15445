from django.urls import path

from curation.views import (
    candidates, conflicts, consolidation, dashboard, entries, forgets, health, learning, maintenance, releases,
    reviewers, scope_policies, skills, tokens,
)

app_name = "curation"

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("healthz/", health.healthz, name="healthz"),
    *candidates.urlpatterns,
    *conflicts.urlpatterns,
    *consolidation.urlpatterns,
    *skills.urlpatterns,
    *forgets.urlpatterns,
    path("skills/", skills.skill_list, name="skills"),
    path("skills/export.zip", skills.export_zip, name="skills-export"),
    path("skills/<str:slug>/", skills.skill_page, name="skill"),
    path("skills/<str:slug>/SKILL.md", skills.skill_md, name="skill-md"),
    path("skills/<str:slug>/retire/", skills.retire, name="skill-retire"),
    path("entries/<int:entry_id>/", entries.detail, name="entry"),
    path("entries/<int:entry_id>/history.json", entries.history_json, name="entry-history"),
    path("entries/<int:entry_id>/evidence/", entries.add_evidence_view, name="entry-evidence"),
    path("entries/<int:entry_id>/forget/", forgets.file_for_entry, name="entry-forget"),
    path("agents/tokens/", tokens.token_list, name="tokens"),
    path("agents/tokens/new/", tokens.token_create, name="token-create"),
    path("agents/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token-revoke"),
    path("releases/", releases.releases, name="releases"),
    path("releases/publish/", releases.publish, name="release-publish"),
    path("releases/<int:number>/rollback/", releases.rollback, name="release-rollback"),
    path("releases/diff/", releases.diff, name="release-diff"),
    path("releases/diff.json", releases.diff_json, name="release-diff-json"),
    path("releases/export.zip", releases.export_zip, name="release-export"),
    path("preview/", releases.preview, name="preview"),
    path("reviewers/", reviewers.reviewers, name="reviewers"),
    path("learning/", learning.learning, name="learning"),
    path("learning/entries/<int:entry_id>/recheck/", learning.recheck, name="learning-recheck"),
    path("policies/", scope_policies.scope_policies_page, name="scope-policies"),
    path("policies/<str:kind>/", scope_policies.set_policy, name="scope-policy-set"),
    # The pages each kind had before it was a section of the one above: bookmarks lead to the section.
    path("review/rules/", scope_policies.moved_to("review")),
    path("learning/holdout/", scope_policies.moved_to("holdout")),
    path("admission/", scope_policies.moved_to("admission")),
    path("replay/latest/<str:name>", dashboard.replay_report, name="replay-report"),
    path("maintenance/", maintenance.page, name="maintenance"),
    path("maintenance/<str:task>/run/", maintenance.run_now, name="maintenance-run"),
]
