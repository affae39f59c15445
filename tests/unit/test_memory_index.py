"""MEMORY.md's lines: a topic's line names its kinds whole or counts them, and a cut line ends at a phrase."""

from curation.rules.memory_export import INDEX_LINE_MAX, Lesson, clip, export_files

KINDS = ["fact", "failure_lesson", "human_correction", "preference", "procedure", "success_pattern"]


def index_of(scope, kinds, summary="s"):
    lessons = [Lesson(i, scope, k, f"t{i}", "c", (), "", "external", 0.8) for i, k in enumerate(kinds, start=1)]
    return export_files(lessons, [], version_number=2, summary=summary)["MEMORY.md"]


def test_a_topic_line_names_its_kinds_whole_or_counts_the_rest():
    index = index_of("acme/billing-api/container", KINDS)
    [line] = [line for line in index.splitlines() if line.startswith("- [")]
    assert len(line) <= INDEX_LINE_MAX and "…" not in line
    assert line.startswith("- [acme/billing-api/container](topics/acme/billing-api/container.md): 6 lessons (fact")
    assert line.endswith("more kinds)")  # not "failure…"
    shown = line.split(" (", 1)[1].rstrip(")").split(" and ")[0].split(", ")
    assert all(kind.replace("_", " ") in KINDS[i].replace("_", " ") for i, kind in enumerate(shown))


def test_a_short_scope_lists_every_kind():
    index = index_of("acme/web", KINDS[:3])
    assert "- [acme/web](topics/acme/web.md): 3 lessons (fact, failure lesson, human correction)" in index


def test_a_cut_line_ends_at_a_phrase_or_a_word():
    text = "Curated and reviewed lessons, published as version 2: split the rebase advice by keyword, then " * 2
    cut = clip(text, 110)
    assert len(cut) <= 110 and cut.endswith("…")
    assert text.startswith(cut[:-1])
    assert cut[-2] != " " and not cut[:-1].endswith(("spl", "reba"))  # a whole word
    assert clip("the checks (lint, types, the slow integration suite and the browser tests) pass", 40) == "the checks…"
