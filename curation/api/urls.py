from django.urls import path, re_path

from . import docs, views

app_name = "api"

urlpatterns = [
    path("candidates", views.candidates, name="candidates"),
    path("candidates/batch", views.candidates_batch, name="candidates-batch"),
    path("memory", views.memory, name="memory"),
    path("feedback", views.feedback, name="feedback"),
    path("entries/<int:entry_id>", views.entry_detail, name="entry"),
    path("entries/<int:entry_id>/evidence", views.entry_evidence, name="entry-evidence"),
    path("openapi.json", docs.openapi_json, name="openapi"),
    path("docs", docs.docs_page, name="docs"),
    re_path(r"", views.unknown_endpoint),  # anything else under /api/v1/ answers JSON, not an HTML page
]
