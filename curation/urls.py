from django.urls import path

from curation.views import candidates, conflicts, consolidation, dashboard, entries, maintenance, tokens

app_name = "curation"

urlpatterns = [
    path("", dashboard.home, name="home"),
    path("review/candidates/", candidates.queue, name="candidates"),
    path("review/candidates/bulk/", candidates.bulk, name="candidates-bulk"),
    path("review/candidates/<int:entry_id>/", candidates.card, name="candidate-card"),
    path("review/candidates/<int:entry_id>/approve/", candidates.approve, name="candidate-approve"),
    path("review/candidates/<int:entry_id>/edit/", candidates.edit_approve, name="candidate-edit"),
    path("review/candidates/<int:entry_id>/reject/", candidates.reject, name="candidate-reject"),
    path("review/candidates/<int:entry_id>/defer/", candidates.defer, name="candidate-defer"),
    path("review/candidates/<int:entry_id>/merge/", candidates.merge, name="candidate-merge"),
    path("review/conflicts/", conflicts.queue, name="conflicts"),
    path("review/conflicts/bulk/", conflicts.bulk, name="conflicts-bulk"),
    path("review/conflicts/<int:conflict_id>/", conflicts.card, name="conflict-card"),
    path("review/conflicts/<int:conflict_id>/keep/", conflicts.keep, name="conflict-keep"),
    path("review/conflicts/<int:conflict_id>/split/", conflicts.split, name="conflict-split"),
    path("review/conflicts/<int:conflict_id>/merge/", conflicts.merge, name="conflict-merge"),
    path("review/conflicts/<int:conflict_id>/dismiss/", conflicts.dismiss, name="conflict-dismiss"),
    path("review/consolidation/", consolidation.queue, name="consolidation"),
    path("review/consolidation/bulk/", consolidation.bulk, name="consolidation-bulk"),
    path("review/consolidation/<int:proposal_id>/", consolidation.card, name="proposal-card"),
    path("review/consolidation/<int:proposal_id>/accept/", consolidation.accept, name="proposal-accept"),
    path("review/consolidation/<int:proposal_id>/dismiss/", consolidation.dismiss, name="proposal-dismiss"),
    path("entries/<int:entry_id>/", entries.detail, name="entry"),
    path("entries/<int:entry_id>/history.json", entries.history_json, name="entry-history"),
    path("entries/<int:entry_id>/evidence/", entries.add_evidence_view, name="entry-evidence"),
    path("agents/tokens/", tokens.token_list, name="tokens"),
    path("agents/tokens/new/", tokens.token_create, name="token-create"),
    path("agents/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token-revoke"),
    path("maintenance/", maintenance.page, name="maintenance"),
    path("maintenance/<str:task>/run/", maintenance.run_now, name="maintenance-run"),
]
