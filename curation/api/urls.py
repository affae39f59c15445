from django.urls import path, re_path

from . import docs, skills, views

app_name = "api"

urlpatterns = [
    path("token", views.token_detail, name="token"),
    path("candidates", views.candidates, name="candidates"),
    path("candidates/batch", views.candidates_batch, name="candidates-batch"),
    path("memory", views.memory, name="memory"),
    path("memory/search", views.memory_search, name="memory-search"),
    path("feedback", views.feedback, name="feedback"),
    path("evaluation", views.evaluation, name="evaluation"),
    path("entries/<int:entry_id>", views.entry_detail, name="entry"),
    path("entries/<int:entry_id>/evidence", views.entry_evidence, name="entry-evidence"),
    path("export", views.export, name="export"),
    path("forget-requests", views.forget_requests, name="forget-requests"),
    path("memory-tests/run", views.memory_tests_run, name="memory-tests-run"),
    path("skills", skills.skill_list, name="skills"),
    path("skills/<str:slug>", skills.skill_detail, name="skill"),
    path("skills/<str:slug>/trials", skills.skill_trials, name="skill-trials"),
    path("openapi.json", docs.openapi_json, name="openapi"),
    path("docs", docs.docs_page, name="docs"),
    re_path(r"", views.unknown_endpoint),  # anything else under /api/v1/ answers JSON, not an HTML page
]
