"""The simulated day as pictures for the manual (docs/benchmarks.md, docs/img/).

`make simulate` keeps the series its figures come from in bench/simulated-day.json (the POP3
polls in each hour of each mailbox day, every mail's delay from its arrival to its post, the mails
sent in each second of the digest run) and draws them here; `python -m bench.pictures` draws them
again from that file without simulating. Each SVG names the sha256 of the data file it was drawn
from, and the page's sentences are written from the same file (tests/fast/test_pictures.py holds
the file to bench/results.json's figures and the pictures to the file).

- docs/img/polls-per-hour.svg: POP3 polls in each hour of the day, for each share of the groups
  receiving by push, against the fixed 5-minute rhythm.
- docs/img/mail-delay.svg: the share of the mails posted within a time, polled and pushed, each
  with its p95.
- docs/img/send-rate.svg: the mails sent each second (10-second means) through the digests and the
  10,000-subscriber burst, against the sending rate the stack keeps to.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from bench.report import PAGE, REPO_ROOT, write_section

DATA = REPO_ROOT / "bench" / "simulated-day.json"
IMAGES = REPO_ROOT / "docs" / "img"
NAMES = ("polls-per-hour.svg", "mail-delay.svg", "send-rate.svg")
BLOCK = ("<!-- pictures:start -->", "<!-- pictures:end -->")
# The send rate is drawn as means over this many seconds (a second's count is 13 or 14 or 15:
# drawn one by one they are a grey band); the busiest second is named beside it.
MEAN_S = 10
COLOURS = {"0": "#1f4e79", "50": "#7f7f7f", "100": "#c55a11"}
# Where each day's p95 is written beside its point (the 0% and 50% days' are close together).
LABEL_AT = {"50": ((-8, -14), "right"), "100": ((8, -14), "left")}


def percentile(values: list[float], share: float) -> float:
    """bench/mail_day.py's percentile: the smallest value with `share` of them at or below it."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def load(path: Path = DATA) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}


def fingerprint(path: Path = DATA) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def merged(data: dict[str, Any], series: dict[str, Any]) -> dict[str, Any]:
    """The data file with this run's series in place of the same series of an earlier run (a run
    of one day, `--only`, keeps the other's); delays to a tenth of a second."""
    from bench.mail_day import reference

    days = dict(data.get("mail_days", {}))
    for share, day in series.get("mail_days", {}).items():
        if day:
            days[share] = {
                "polls_per_hour": [int(n) for n in day["polls_per_hour"]],
                "delays_s": sorted(round(d, 1) for d in day["delays_s"]),
            }
    found = {
        "about": "The series of make simulate's day (bench/pictures.py draws them): keys of "
        "mail_days are the percent of the groups receiving by push.",
        "reference_polls_per_day": reference(10_000)["mail_day_polls"],
        "mail_days": dict(sorted(days.items(), key=lambda item: float(item[0]))),
    }
    sends = series.get("sends") or data.get("sends")
    if sends:
        found["sends"] = sends
    return found


def publish(series: dict[str, Any], path: Path = DATA) -> list[Path]:
    """Write the data file with this run's series, draw the pictures and the page's sentences
    (once the mailbox day is in it)."""
    data = merged(load(path), series)
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    return [path, *draw(path)] if "0" in data["mail_days"] else [path]


# --- the pictures ---------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text as text (searchable, small) and the same file for the same data (no date, fixed ids).
    plt.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "agora", "font.size": 10, "axes.grid": True}
    )
    plt.rcParams["grid.alpha"] = 0.3
    return plt


def _share_label(share: str) -> str:
    return {"0": "every group by POP3", "100": "every group by push"}.get(
        share, f"{share}% of the groups by push"
    )


def polls_per_hour(plt: Any, data: dict[str, Any]) -> Any:
    figure, axes = plt.subplots(figsize=(8, 4.2))
    hours = list(range(25))
    for share, day in data["mail_days"].items():
        counts = day["polls_per_hour"]
        axes.stairs(counts, hours, color=COLOURS.get(share), linewidth=2,
                    label=f"{_share_label(share)}: {sum(counts):,} a day")  # fmt: skip
    fixed = data["reference_polls_per_day"]
    axes.axhline(fixed / 24, color="black", linestyle="--", linewidth=1,
                 label=f"the fixed 5-minute rhythm: {fixed:,.0f} a day")  # fmt: skip
    axes.set(xlim=(0, 24), ylim=(0, fixed / 24 * 1.15), xticks=range(0, 25, 3),
             xlabel="hour of the simulated day (UTC)", ylabel="POP3 polls per hour")  # fmt: skip
    axes.yaxis.set_major_formatter(lambda value, _: f"{value:,.0f}")
    polled = sum(data["mail_days"]["0"]["polls_per_hour"])
    axes.set_title(
        f"10,000 mailboxes polled as their mail comes: {polled / fixed:.0%} of the fixed rhythm's polls"
    )
    axes.legend(loc="upper right", bbox_to_anchor=(0.99, 0.84), fontsize=9)
    return figure


def mail_delay(plt: Any, data: dict[str, Any]) -> Any:
    figure, axes = plt.subplots(figsize=(8, 4.2))
    p95s = {}
    for share, day in data["mail_days"].items():
        delays = day["delays_s"]
        share_of = [(n + 1) / len(delays) for n in range(len(delays))]
        p95s[share] = p95 = percentile(delays, 0.95)
        colour = COLOURS.get(share)
        axes.step(delays, share_of, where="post", color=colour, linewidth=2,
                  label=f"{_share_label(share)}: {len(delays):,} mails, p95 {p95:,.1f} s")  # fmt: skip
        axes.plot([p95], [0.95], "o", color=colour)
        label = f"p95 {p95:,.0f} s" if p95 >= 10 else f"p95 {p95:.1f} s"
        offset, align = LABEL_AT.get(share, ((-6, 6), "right"))
        axes.annotate(label, (p95, 0.95), textcoords="offset points", xytext=offset, ha=align,
                      color=colour)  # fmt: skip
    axes.axhline(0.95, color="black", linestyle=":", linewidth=1)
    axes.set_xscale("log")
    axes.set(xlim=(0.5, 2000), ylim=(0, 1.02), xlabel="seconds from a mail's arrival to its post "
             "(log scale)", ylabel="share of the day's mails posted")  # fmt: skip
    axes.xaxis.set_major_formatter(lambda value, _: f"{value:,g}")
    axes.yaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
    polled = p95s["0"]
    pushed = p95s.get("100")
    axes.set_title(
        f"Mail to post: pushed in seconds (p95 {pushed:.1f} s), polled in minutes (p95 {polled / 60:.0f} min)"
        if pushed is not None
        else f"Mail to post by POP3 polling: 95% within {polled / 60:.0f} minutes"
    )
    # Between the pushed mail's rise and the polled mail's: the curves leave that corner empty.
    axes.legend(loc="upper left", bbox_to_anchor=(0.27, 0.86), fontsize=9)
    return figure


def _means(counts: list[int]) -> list[float]:
    return [sum(counts[n : n + MEAN_S]) / MEAN_S for n in range(0, len(counts), MEAN_S)]


def send_rate(plt: Any, data: dict[str, Any]) -> Any:
    sends = data["sends"]
    digests, instant = sends["digest_per_s"], sends["instant_per_s"]
    minutes = [n * MEAN_S / 60 for n in range(len(_means(digests)) + 1)]
    figure, axes = plt.subplots(figsize=(8, 4.2))
    digest_means, instant_means = _means(digests), _means(instant)
    axes.stairs(
        [d + i for d, i in zip(digest_means, instant_means, strict=True)],
        minutes,
        baseline=digest_means,  # type: ignore[arg-type]
        fill=True,
        color="#c55a11",
        label=f"instant emails of a post to {sum(instant):,} subscribers",
    )
    axes.stairs(digest_means, minutes, fill=True, color="#1f4e79", alpha=0.85,
                label=f"daily digests: {sum(digests):,}")  # fmt: skip
    rate = sends["rate"]
    axes.axhline(rate, color="black", linestyle="--", linewidth=1.2,
                 label=f"the sending rate every sender shares (SES quota): {rate:g} mails/s")  # fmt: skip
    busiest = max(d + i for d, i in zip(digests, instant, strict=True))
    axes.set(xlim=(0, minutes[-1]), ylim=(0, rate * 1.6),
             xlabel="minutes after the digests' schedule (06:00 UTC)",
             ylabel=f"mails sent per second ({MEAN_S}-second means)")  # fmt: skip
    axes.annotate(
        f"the post, {sends['post_at_s'] / 60:.0f} min in",
        (sends["post_at_s"] / 60, rate * 1.02),
        xytext=(15, 18),
        textcoords="offset points",
        arrowprops={"arrowstyle": "->"},
    )
    axes.set_title(
        f"{sum(digests):,} digests and a burst of {sum(instant):,}: at most {busiest} mails "
        f"in a second, the rate {rate:g} a second"
    )
    axes.legend(loc="upper right", fontsize=9)
    return figure


def draw(
    path: Path = DATA, out: Path = IMAGES, page: Path = PAGE, png: Path | None = None
) -> list[Path]:
    """The pictures of the data file into `out` (and PNG copies into `png` to look at), and the
    page's section naming them."""
    plt = _pyplot()
    data = load(path)
    note = f"drawn by python -m bench.pictures from bench/simulated-day.json sha256 {fingerprint(path)}"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    drawers = {
        "polls-per-hour.svg": polls_per_hour,
        "mail-delay.svg": mail_delay,
        "send-rate.svg": send_rate,
    }
    drawn = {"send-rate.svg": "sends" in data}
    for name in NAMES:
        if not drawn.get(name, "0" in data.get("mail_days", {})):
            continue  # that day was not simulated yet
        figure = drawers[name](plt, data)
        figure.tight_layout()
        target = out / name
        figure.savefig(target, format="svg", metadata={"Date": None, "Description": note})
        written.append(target)
        if png is not None:
            png.mkdir(parents=True, exist_ok=True)
            figure.savefig(png / name.replace(".svg", ".png"), dpi=110)
        plt.close(figure)
    if write_section(page, *BLOCK, section(data)):
        written.append(page)
    return written


def section(data: dict[str, Any]) -> str:
    """The page's pictures, one sentence each, its numbers from the data file."""
    days = data["mail_days"]
    polled = days["0"]
    fixed = data["reference_polls_per_day"]
    lines = [
        f"![POP3 polls per hour of the simulated day](img/polls-per-hour.svg)\n\n"
        f"Polls follow the mail: the 10,000 mailboxes took {sum(polled['polls_per_hour']):,} polls "
        f"in the day, against {fixed:,.0f} at a fixed 5 minutes"
        + "".join(
            f", {sum(day['polls_per_hour']):,} with {share}% of the groups by push"
            for share, day in days.items()
            if share != "0"
        )
        + ".",
        f"![Share of the mails posted within a time, polled and pushed](img/mail-delay.svg)\n\n"
        f"A polled mail waits for its mailbox's next poll: 95% of the {len(polled['delays_s']):,} "
        f"mails were posted within {percentile(polled['delays_s'], 0.95):,.1f} s"
        + (
            f"; pushed, within {percentile(days['100']['delays_s'], 0.95):.1f} s."
            if "100" in days
            else "."
        ),
    ]
    if "sends" in data:
        sends = data["sends"]
        total = [d + i for d, i in zip(sends["digest_per_s"], sends["instant_per_s"], strict=True)]
        last = max(n for n, count in enumerate(sends["instant_per_s"]) if count)
        burst = last + 1 - sends["post_at_s"]
        lines.append(
            f"![Mails sent per second through the digests and the burst](img/send-rate.svg)\n\n"
            f"Every sender shares one sending clock: {sum(sends['digest_per_s']):,} digests and "
            f"a post's {sum(sends['instant_per_s']):,} instant emails "
            f"({sends['post_at_s'] / 60:.0f} minutes in, all sent in the {burst / 60:.0f} minutes "
            f"after it) went out in {len(total) / 60:.0f} minutes, never more than {max(total)} "
            f"in a second against the rate of {sends['rate']:g} a second."
        )
    return "\n\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pictures", description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="the series (make simulate's)")
    parser.add_argument("--png", type=Path, help="also write PNG copies here, to look at")
    arguments = parser.parse_args(argv)
    if not arguments.data.exists():
        print(f"python -m bench.pictures: no {arguments.data}: run make simulate", file=sys.stderr)
        return 1
    for path in draw(arguments.data, png=arguments.png):
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
