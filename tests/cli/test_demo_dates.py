"""The demo never goes stale (CONTRACT §1): `demo/community.json`'s dates are written relative to
a day (`datesRelativeTo`, docs/cli.md), and `load` moves them to the day of the load, so the tour
shows past and upcoming events and recent posts on any day; `export` writes the dates as stored,
without the marker, and an export loads back to the same export. The day of the load is the
clock's (`chalicelib.clock.fixed_at`: the whole API at a moment the test sets)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest

from chalicelib.clock import fixed_at, utc_now
from tests.support import REPO_ROOT
from tests.support.passwords import demo_with_shipped_hashes

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text(encoding="utf-8"))
ANN = next(u["id"] for u in DEMO["users"] if u["email"] == "ann@agora.example")
V1 = "/api/v1/en_US"


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def events_of_every_group(api, kind: str) -> list[dict]:
    found = []
    for group in DEMO["groups"]:
        found += api.get_object(f"{V1}/event/list/{kind}/{group['id']}?pageSize=100", ANN)["events"]
    return found


@pytest.mark.parametrize("years", [0, 1, 5])
def test_the_demo_loaded_years_from_now_has_past_and_upcoming_events_and_recent_posts(
    api, tmp_path, years
):
    from chalicelib import deps

    hashed = json.loads(demo_with_shipped_hashes(tmp_path).read_text(encoding="utf-8"))
    moment = utc_now() + timedelta(days=365 * years)
    with fixed_at(moment):
        deps.fixture_service().load(hashed)
        upcoming = events_of_every_group(api, "upcoming")
        expired = events_of_every_group(api, "expired")
        newest = max(
            parse(p["createdOn"])
            for g in DEMO["groups"]
            for p in api.get_object(f"{V1}/post/list/{g['id']}?pageSize=100", ANN)["posts"]
        )
    assert len(upcoming) == 6 and len(expired) == 1
    assert all(parse(e["startDate"]) > moment for e in upcoming)
    # The nearest upcoming event is days away, the farthest months; the past one weeks ago.
    starts = sorted(parse(e["startDate"]) - moment for e in upcoming)
    assert starts[0] < timedelta(days=8) and starts[-1] > timedelta(days=180)
    assert timedelta(days=14) < moment - parse(expired[0]["endDate"]) < timedelta(days=60)
    # Posts of the last days (yesterday's among them): a day a digest has something to say about.
    assert timedelta(0) < moment - newest < timedelta(days=2)


def test_the_demos_dates_move_by_whole_days_to_the_day_of_the_load_and_the_export_has_them_as_stored(
    tmp_path, capsys
):
    from moto import mock_aws

    from chalicelib.cli import main
    from chalicelib.settings import reload_settings

    written = date.fromisoformat(DEMO["datesRelativeTo"])
    moment = datetime(2031, 3, 9, 23, 59, tzinfo=UTC)  # a day long after the demo was written
    moved = timedelta(days=(moment.date() - written).days)
    with mock_aws(), fixed_at(moment):
        reload_settings()
        assert main(["create-tables"]) == 0
        assert main(["load", str(demo_with_shipped_hashes(tmp_path))]) == 0
        first, second = tmp_path / "first.json", tmp_path / "second.json"
        assert main(["export", str(first)]) == 0
        exported = json.loads(first.read_text(encoding="utf-8"))
        assert "datesRelativeTo" not in exported  # the dates it writes are absolute
        # Every date of the file, moved by the same whole days (the time of day as written).
        for section, fields in {
            "posts": ["createdOn"],
            "comments": ["createdOn", "approvedOn", "deletedOn"],
            "events": ["startDate", "endDate"],
        }.items():
            given = {r["id"]: r for r in DEMO[section]}
            for record in exported[section]:
                for name in fields:
                    if given[record["id"]].get(name) is None:
                        assert record[name] is None
                        continue
                    want = parse(given[record["id"]][name]) + moved
                    assert parse(record[name]) == want, (section, record["id"], name)
        reports = [r for c in exported["comments"] for r in c["spamReports"]]
        assert reports and all(parse(r["createdOn"]) < moment for r in reports)
        # An export loads back to the same export, byte for byte, on another day too.
        with fixed_at(moment + timedelta(days=100)):
            assert main(["load", str(first)]) == 0
            assert main(["export", str(second)]) == 0
        assert second.read_bytes() == first.read_bytes()
    capsys.readouterr()


def test_a_move_that_takes_a_date_out_of_the_calendar_is_an_error_with_its_path_and_writes_nothing(
    aws, tmp_path
):
    from chalicelib import deps
    from chalicelib.services.fixture import FixtureInvalid
    from chalicelib.store.groups import GroupRepository

    fixture = {
        **json.loads(demo_with_shipped_hashes(tmp_path).read_text(encoding="utf-8")),
        "datesRelativeTo": "0001-01-02",
    }
    fixture["events"][2] = {**fixture["events"][2], "startDate": "9999-12-30T00:00:00Z"}
    with pytest.raises(FixtureInvalid) as invalid:
        deps.fixture_service().load(fixture)
    [error] = invalid.value.errors
    assert error.path == "events[2].startDate"
    assert "outside the dates Agora can store" in error.message
    assert GroupRepository().root_id() is None  # nothing was written


@pytest.mark.fast
@pytest.mark.parametrize("day", ["2026-02-30", "2026-11-21T00:00:00Z", 20261121, "21/11/2026"])
def test_a_marker_that_is_not_a_day_is_an_error_at_its_path(day):
    from chalicelib.services.fixture import FixtureInvalid
    from chalicelib.services.fixture_rules import validate_fixture

    with pytest.raises(FixtureInvalid) as invalid:
        validate_fixture({"datesRelativeTo": day, "groups": DEMO["groups"][:1]})
    assert [e.path for e in invalid.value.errors] == ["datesRelativeTo"]
