"""The entry timeline's values read as dates, "—" and numbers, not raw snapshot strings."""

from curation.templatetags.timeline import timeline_value


def test_timeline_values_are_formatted():
    assert timeline_value("2026-12-03T17:05:42.123456+00:00") == "2026-12-03 17:05 UTC"
    assert timeline_value("2026-12-03T18:05:42+01:00") == "2026-12-03 17:05 UTC"
    assert timeline_value(None) == "—" and timeline_value("") == "—" and timeline_value([]) == "—"
    assert timeline_value(["git", "config"]) == "git, config"
    assert timeline_value(0.8500001) == "0.85" and timeline_value(0) == 0
    assert (
        timeline_value("acme/web") == "acme/web"
        and timeline_value("2026-13-99T99:99 not a date") == "2026-13-99T99:99 not a date"
    )
