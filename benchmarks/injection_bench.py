"""The injection detector (curation/rules/injection.py) against its corpus: recall over the injection samples,
false positives over every benign lesson (the demo's, the replay's and the look-alike legitimate ones), and
what scanning a lesson costs.

    .venv/bin/python benchmarks/injection_bench.py [--repeat 20]            (make bench-injection)

No database: the detector is pure. Exits non-zero when recall is under 90% or false positives over 2%.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RECALL_AT_LEAST = 0.90
FALSE_POSITIVES_AT_MOST = 0.02


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the corpus for the timing")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryadmin.settings")
    import django

    django.setup()
    from curation.rules import injection
    from tests.fixtures.injection_corpus import INJECTIONS, benign_lessons

    benign = benign_lessons()
    by_style: dict[str, list[bool]] = {}
    for style, _, text in INJECTIONS:
        by_style.setdefault(style, []).append(bool(injection.scan(text, "content")))
    caught = sum(sum(v) for v in by_style.values())
    false = [text for text in benign if injection.scan(text, "content")]
    recall, false_rate = caught / len(INJECTIONS), len(false) / len(benign)

    texts = [text for _, _, text in INJECTIONS] + benign
    passes = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for text in texts:
            injection.scan(text, "content")
        passes.append((time.perf_counter() - started) / len(texts))
    mean_chars = statistics.mean(len(t) for t in texts)

    print(f"injection detector v{injection.DETECTOR_VERSION}")
    print(f"  recall          {recall:7.1%}  ({caught}/{len(INJECTIONS)} injection samples; target >= 90%)")
    for style, hits in sorted(by_style.items()):
        print(f"    {style:<14}{sum(hits):>3}/{len(hits)}")
    print(f"  false positives {false_rate:7.2%}  ({len(false)}/{len(benign)} benign lessons; target <= 2%)")
    for text in false[:10]:
        print(f"    flagged: {text[:100]!r}")
    print(
        f"  cost            {1e6 * statistics.median(passes):7.1f} µs a lesson (median of {args.repeat} passes over "
        f"{len(texts)} texts, {mean_chars:.0f} characters on average)"
    )
    return 0 if recall >= RECALL_AT_LEAST and false_rate <= FALSE_POSITIVES_AT_MOST else 1


if __name__ == "__main__":
    sys.exit(main())
