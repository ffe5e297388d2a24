"""The manual's pictures of the simulated day (bench/pictures.py): every image docs/benchmarks.md
names is there and was drawn from bench/simulated-day.json, whose series give back the figures
bench/results.json states; the page's sentences are the data file's."""

from __future__ import annotations

import json
import re

import pytest

from bench import pictures
from bench.report import PAGE, RESULTS_PATH, significant

IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def results() -> dict[str, float]:
    figures = json.loads(RESULTS_PATH.read_text(encoding="utf-8"))["figures"]
    return {figure["name"]: figure["value"] for figure in figures}


def same(drawn: float, stated: float, tolerance: float = 0.15) -> bool:
    """The drawn series' figure as results.json keeps it (4 significant digits; delays in the
    data file to a tenth of a second)."""
    rounded = significant(drawn)
    return rounded is not None and abs(rounded - stated) <= tolerance


def test_every_image_the_page_names_is_there():
    named = IMAGE.findall(PAGE.read_text(encoding="utf-8"))
    assert {f"img/{name}" for name in pictures.NAMES} <= set(named)
    missing = [name for name in named if not (PAGE.parent / name).is_file()]
    assert missing == []


def test_each_picture_was_drawn_from_the_data_file_as_it_is():
    stamp = pictures.fingerprint()
    for name in pictures.NAMES:
        svg = (pictures.IMAGES / name).read_text(encoding="utf-8")
        assert f"bench/simulated-day.json sha256 {stamp}" in svg, (
            f"docs/img/{name} was drawn from another bench/simulated-day.json: python -m bench.pictures"
        )


def test_the_data_file_gives_back_the_mail_days_figures():
    data, stated = pictures.load(), results()
    days = data["mail_days"]
    polled = days["0"]
    assert same(sum(polled["polls_per_hour"]), stated["mail_day_polls"], 0)
    assert len(polled["polls_per_hour"]) == 24
    for share, key in ((0.5, "mail_day_delay_p50_s"), (0.95, "mail_day_delay_p95_s")):
        assert same(pictures.percentile(polled["delays_s"], share), stated[key])
    assert same(max(polled["delays_s"]), stated["mail_day_delay_max_s"])
    assert same(data["reference_polls_per_day"], stated_reference("mail_day_polls"), 0)
    for share, day in days.items():
        if share == "0":
            continue
        name = f"mail_push_day_{share}"
        assert same(sum(day["polls_per_hour"]), stated[f"{name}_polls"], 0)
        assert same(pictures.percentile(day["delays_s"], 0.95), stated[f"{name}_delay_p95_s"])


def stated_reference(name: str) -> float:
    figures = json.loads(RESULTS_PATH.read_text(encoding="utf-8"))["figures"]
    return float(next(f["reference"] for f in figures if f["name"] == name))


def test_the_data_file_gives_back_the_sending_figures():
    sends, stated = pictures.load()["sends"], results()
    digests, instant = sends["digest_per_s"], sends["instant_per_s"]
    assert (sum(digests), sum(instant)) == (100_000, 10_000)
    last_digest = max(n for n, count in enumerate(digests) if count)
    assert last_digest == int(stated["digest_100k_s"])
    last_instant = max(n for n, count in enumerate(instant) if count)
    assert abs(last_instant - sends["post_at_s"] - stated["notify_10k_s"]) <= 1
    # Whole seconds count no more than the busiest sliding second the results state.
    busiest = max(d + i for d, i in zip(digests, instant, strict=True))
    assert busiest <= stated["digest_100k_peak_rate"] <= sends["rate"]


def test_the_page_says_what_the_data_file_holds():
    start, end = pictures.BLOCK
    page = PAGE.read_text(encoding="utf-8")
    assert f"{start}\n{pictures.section(pictures.load())}\n{end}" in page


def test_the_pictures_are_drawn_from_a_data_file_alone(tmp_path):
    data = {
        "reference_polls_per_day": 2_880.0,
        "mail_days": {
            "0": {"polls_per_hour": [40] * 24, "delays_s": [10.0, 200.0, 300.5, 850.0]},
            "100": {"polls_per_hour": [1] * 24, "delays_s": [1.5, 2.0, 3.9]},
        },
        "sends": {"rate": 14.0, "post_at_s": 20.0, "digest_per_s": [14] * 20 + [4] + [0] * 5,
                  "instant_per_s": [0] * 20 + [10] * 6},
    }  # fmt: skip
    source = tmp_path / "simulated-day.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n{pictures.BLOCK[0]}\nold\n{pictures.BLOCK[1]}\n", encoding="utf-8")
    written = pictures.draw(source, tmp_path / "img", page)
    assert [path.name for path in written] == [*pictures.NAMES, "page.md"]
    delay = (tmp_path / "img" / "mail-delay.svg").read_text(encoding="utf-8")
    # Text stays text (searchable) and names what it was drawn from.
    assert "p95 850 s" in delay and "p95 3.9 s" in delay
    assert pictures.fingerprint(source) in delay
    rate = (tmp_path / "img" / "send-rate.svg").read_text(encoding="utf-8")
    assert "14 mails/s" in rate and "at most 14 mails in a second" in rate
    text = page.read_text(encoding="utf-8")
    assert "old" not in text and "within 850.0 s; pushed, within 3.9 s." in text
    assert "a post's 60 instant emails (0 minutes in, all sent in the 0 minutes after it)" in text
    # The same data draws the same files (no date, fixed ids): a redraw changes nothing in git.
    before = delay
    pictures.draw(source, tmp_path / "img", page)
    assert (tmp_path / "img" / "mail-delay.svg").read_text(encoding="utf-8") == before


def test_without_a_data_file_the_command_says_what_to_run(tmp_path, capsys):
    assert pictures.main(["--data", str(tmp_path / "absent.json")]) == 1
    assert "run make simulate" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("values", "share", "expected"), [([3.0, 1.0, 2.0], 0.5, 2.0), ([], 0.95, 0.0)]
)
def test_percentile_is_the_mail_days(values, share, expected):
    from bench.mail_day import _percentile

    assert pictures.percentile(values, share) == expected == _percentile(values, share)
