"""The CPU of the checks every candidate passes, in µs a candidate, on the ingest bench's corpora.

    .venv/bin/python benchmarks/checks_bench.py [--corpus varied|template|both] [--candidates 2000] [--rounds 5]
                                                (make bench-checks)

No database and no network: each check is called in process on the candidates benchmarks/ingest_bench.py
submits (benchmarks/ingest_corpus.py: fresh lessons, one in ten a paraphrase of another), as ingest calls it:

- redaction: `redact_fields` over a candidate's text fields and its evidence's (what prepare_candidate redacts),
  the memory of clean texts emptied before each round, so that every text is scanned as ingest first sees it;
- validation: `clean_entry_fields` and `clean_evidence` over the redacted candidate;
- prepare_candidate: all of the above, the evidence's injection screen and the confidence (the ingest bench's
  "validation and redaction");
- injection screen: `scan_fields` over the entry's text (what the write path's screen reads at the insert) and
  each piece of evidence's (`evidence_found`, as the Evidence rows are built);
- contradiction: a lesson's directives and the words its partners are looked up by (the conflict detection's
  own CPU, before any statement);
- similarity words: the word set of trigger and content.

Redaction and the injection screen are also timed as the straightforward checks (tests/fixtures/
reference_checks.py: every pattern searched on every text, nothing skipped), in the same rounds, alternating
which goes first; the ratio is theirs over the rule's. CPU is this process's time (time.process_time), the
median of the rounds; the load average is printed with it (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ingest_corpus import CORPORA  # noqa: E402


def configure() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    os.environ.update(DEBUG="false", LOG_LEVEL="WARNING")
    for name in ("DATABASE_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)
    os.environ["MEMORYADMIN_DATA_DIR"] = tempfile.mkdtemp(prefix="checks-bench-")
    import django

    django.setup()


def candidates(corpus: str, count: int) -> list[dict]:
    """The candidates of ingest_bench's batches: fresh lessons, every tenth from the fifth a paraphrase."""
    lesson, paraphrase = CORPORA[corpus]
    rng = random.Random(11)
    made = []
    for n in range(count):
        fresh = lesson(rng, "b3nch", n, f"org{n % 20}/svc{rng.randrange(200)}")
        if n % 10 == 4 and made:
            fresh = {**fresh, **paraphrase(rng, rng.choice(made))}
        made.append(fresh)
    return made


def checks(items: list[dict]) -> dict[str, tuple]:
    """Each check: (its function over every candidate, the straightforward one or None)."""
    from curation.rules import contradiction, injection, redaction
    from curation.rules.similarity import words
    from curation.services.candidates import _REDACTED_FIELDS, CANDIDATE_FIELDS, prepare_candidate
    from curation.services.validation import clean_entry_fields, clean_evidence
    from tests.fixtures import reference_checks as reference

    data = [{k: v for k, v in item.items() if k != "evidence"} for item in items]
    evidence = [item["evidence"] for item in items]
    prepared = [prepare_candidate(d, e) for d, e in zip(data, evidence)]
    known_hosts = tuple(injection.config.INJECTION_KNOWN_HOSTS.value)

    def redacting(redact_fields):
        def run():
            redaction._known_clean.clear()
            for d, pieces in zip(data, evidence):
                redact_fields(d, _REDACTED_FIELDS)
                for piece in pieces:
                    redact_fields(piece, ("excerpt", "task_ref"))

        return run

    def validating():
        for p, d, pieces in zip(prepared, data, evidence):
            clean_entry_fields({**d, **p.fields}, fields=CANDIDATE_FIELDS)
            for piece in pieces:
                clean_evidence(piece)

    def preparing():
        redaction._known_clean.clear()
        for d, pieces in zip(data, evidence):
            prepare_candidate(d, pieces)

    def screening(scan):
        def run():
            for p in prepared:
                for name in injection.SCANNED_FIELDS:
                    value = p.fields.get(name)
                    for text in value if isinstance(value, list) else [value]:
                        if isinstance(text, str):
                            scan(text, name, known_hosts=known_hosts)
                for piece in p.evidence:
                    for name in injection.EVIDENCE_FIELDS:
                        if isinstance(piece.get(name), str):
                            scan(piece[name], name, known_hosts=known_hosts)

        return run

    def contradicting():
        for p in prepared:
            lesson = contradiction.parse_lesson(p.fields["trigger"], p.fields["content"])
            lesson.search_words  # noqa: B018 - parses the directives, as the partner lookup does

    def wording():
        for p in prepared:
            words(f"{p.fields['trigger']} {p.fields['content']}")

    return {
        "redaction": (redacting(redaction.redact_fields), redacting(reference.redact_fields)),
        "validation": (validating, None),
        "prepare_candidate (all of the above)": (preparing, None),
        "injection screen": (screening(injection.scan), screening(reference.scan)),
        "contradiction directives": (contradicting, None),
        "similarity words": (wording, None),
    }


def cpu(run) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def measure(corpus: str, count: int, rounds: int) -> None:
    items = candidates(corpus, count)
    timed = checks(items)
    mine: dict[str, list[float]] = {name: [] for name in timed}
    theirs: dict[str, list[float]] = {name: [] for name, (_, ref) in timed.items() if ref}
    load = os.getloadavg()[0]
    for round_ in range(rounds):
        for name, (run, ref) in timed.items():
            pair = [(mine, run)] + ([(theirs, ref)] if ref else [])
            for spent, function in pair if round_ % 2 == 0 else pair[::-1]:  # alternate which goes first
                spent[name].append(cpu(function))
    per = 1e6 / count
    print(
        f"checks on the {corpus} corpus: {count:,} candidates, median of {rounds} rounds, CPU µs a candidate; "
        f"load average {load:.2f} → {os.getloadavg()[0]:.2f} (2 cores, shared)"
    )
    print(f"  {'check':<38} {'rule':>9} {'straightforward':>16} {'ratio':>7}")
    for name, spent in mine.items():
        rule = statistics.median(spent) * per
        if name in theirs:
            plain = statistics.median(theirs[name]) * per
            print(f"  {name:<38} {rule:9.1f} {plain:16.1f} {plain / rule:6.1f}x")
        else:
            print(f"  {name:<38} {rule:9.1f}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=[*sorted(CORPORA), "both"], default="both")
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    configure()
    for corpus in sorted(CORPORA) if args.corpus == "both" else [args.corpus]:
        measure(corpus, args.candidates, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
