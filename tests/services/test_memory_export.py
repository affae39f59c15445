"""The export agents load at start-up: MEMORY.md within the limit, topic files, skills, stable bytes."""

from django.core.management import call_command

from curation.rules.memory_export import INDEX_LINE_MAX, INDEX_MAX_BYTES, INDEX_MAX_LINES, Lesson, export_files
from curation.rules.trust import Trust
from curation.services.releases import publish_version
from tests.factories import active


def _lessons(n):
    kinds = ["procedure", "failure_lesson", "fact", "preference", "human_correction"]
    return [
        Lesson(
            i,
            f"org{i % 40}/team{i % 300}/svc{i % 7}",
            kinds[i % 5],
            f"Trigger number {i} about deploys",
            f"Do the thing number {i} carefully",
            (),
            "not on Fridays" if i % 2 else "",
            "self" if i % 3 == 0 else "external",
            0.5 + (i % 40) / 100,
        )
        for i in range(1, n + 1)
    ]


def test_the_index_of_ten_thousand_entries_fits_the_start_up_limit():
    files = export_files(
        _lessons(10_000), [("a-skill", "---\nname: a-skill\n---\n")], version_number=7, summary="ten thousand"
    )
    index = files["MEMORY.md"]
    assert len(index.splitlines()) <= INDEX_MAX_LINES
    assert len(index.encode()) <= INDEX_MAX_BYTES
    topics = [path for path in files if path.startswith("topics/")]
    assert all(f"]({path}): " in index for path in topics)  # one line per topic file
    # every lesson is in exactly one topic file
    body = "\n".join(files[path] for path in topics)
    assert body.count("\n## #") + body.startswith("## #") == 10_000
    assert files["skills/a-skill/SKILL.md"].startswith("---")


def test_a_lesson_says_when_what_when_not_trust_and_its_id():
    lesson = _lessons(15)[14]  # a procedure the agent inferred itself, with a boundary
    files = export_files([lesson], [], version_number=2, summary="s")
    topic = files["topics/org15/team15/svc1.md"]
    assert "## #15 When Trigger number 15 about deploys" in topic
    assert "- Do: Do the thing number 15 carefully" in topic
    assert "- Not on Fridays" in topic and "Does not hold: not" not in topic  # said once
    assert "- Trust: unvalidated inference" in topic and "entry #15" in topic
    assert "- Provenance: agent" in topic  # where it came from: the submitting agent's own word


def test_a_lesson_says_its_provenance_trust():
    relayed, person = (
        Lesson(1, "acme/web", "fact", "t1", "c", (), "", "external", 0.8, trust=Trust.UNTRUSTED),
        Lesson(2, "acme/web", "fact", "t2", "c", (), "", "external", 0.8, trust=Trust.PERSON),
    )
    topic = export_files([relayed, person], [], version_number=1, summary="s")["topics/acme/web.md"]
    first, second = topic.split("## #2 ")
    assert "- Provenance: untrusted" in first and "- Provenance: person" in second


def test_a_large_scope_gets_one_topic_file_per_kind():
    lessons = [
        Lesson(i, "acme/big", ["procedure", "fact"][i % 2], f"t{i}", "c", (), "", "external", 0.8)
        for i in range(1, 302)
    ]
    paths = sorted(p for p in export_files(lessons, [], version_number=1, summary="s") if p.startswith("topics/"))
    assert paths == ["topics/acme/big.fact.md", "topics/acme/big.procedure.md"]


def test_export_memory_writes_the_published_version_and_a_reexport_changes_no_file(tmp_path, lead, reviewer):
    entry = active(reviewer, scope="acme/billing-api", boundary="not in staging", trigger="Rotating keys")
    publish_version(actor=lead, summary="billing")
    call_command("export_memory", str(tmp_path), stdout=open("/dev/null", "w"))
    topic = tmp_path / "topics" / "acme" / "billing-api.md"
    assert f"#{entry.pk} When rotating keys" in topic.read_text()
    assert "version 2" in (tmp_path / "MEMORY.md").read_text()
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.md")}
    call_command("export_memory", str(tmp_path), stdout=open("/dev/null", "w"))
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.md")} == stamps

    call_command("export_memory", str(tmp_path), "--version", "1", stdout=open("/dev/null", "w"))
    assert not topic.exists()  # version 1 holds no lesson of that scope: its stale topic file is gone


def test_a_long_index_line_is_cut_after_a_whole_word_and_says_so():
    summary = (
        "Rotated the billing webhook signing keys across every region and retired the legacy payment "
        "gateway fallback paths"
    )
    index = export_files([], [], version_number=7, summary=summary)["MEMORY.md"]
    line = next(text for text in index.splitlines() if text.startswith("Curated and reviewed"))
    assert len(line) <= INDEX_LINE_MAX and line.endswith("…")
    words = line.removesuffix("…").split()
    assert set(words) <= set(f"Curated and reviewed lessons, published as version 7: {summary}".split())
    short = export_files([], [], version_number=7, summary="Small fix")["MEMORY.md"]
    assert "published as version 7: Small fix\n" in short
