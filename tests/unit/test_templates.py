"""Templates: a Django `{# #}` comment ends on its own line; one spread over lines renders as page text."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_template_comment_spans_lines():
    open_comments = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted(ROOT.glob("**/templates/**/*.html"))
        if ".venv" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if line.count("{#") > line.count("#}")
    ]
    assert open_comments == []
