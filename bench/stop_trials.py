"""Stop trials: `make run` stopped every way a person stops it, and what it kept (issue 56).

    PYTHONPATH=. .venv/bin/python -m bench.stop_trials [--trials 10] [--writes 10] [--mails 3]

For each kind of stop, on a data folder of its own: start the real `make run`, make WRITES
acknowledged writes (events created in the demo's Gardening Club, each answered 200) and deliver
MAILS mails into its local mailbox (as `cli deliver` does, not polled), stop it that way, start it
again and count what is there: each event by id and title, each mail as a post or still waiting
in the mailbox. The restart is the next trial's start. Prints a Markdown table (docs/running.md
has the last one).

Kinds: Ctrl-C (SIGINT to the process group), `kill` of make (SIGTERM), a closed terminal (SIGHUP
to the group), `make run 2>&1 | tee log` whose tee is gone before the Ctrl-C (the output pipe
closed first), five signals 5 ms apart (SIGINT, SIGTERM, SIGINT, SIGTERM, SIGHUP), a second
`make run` on the same folder (its own ports) while the first runs, then Ctrl-C on the first, and
`kill -9` of the group: a kill -9 keeps what the last save (every 30 s) held, so its writes made
since are lost, as documented; its mails are files and stay.

It exits 1 when a stop lost what it must keep (a write, but to `kill -9`; a mail) or a trial
noted a fault (a second make run not refused, a clean stop reported unclean), so that a run of
it says so to whoever ran it, not only in its table.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.running import RunningAgora
from tests.support.stops import (
    add_event,
    deliver,
    events_kept,
    make_run,
    post_titles,
    second_instance,
    signal_group,
    wait_for_the_end,
    waiting_subjects,
)


@dataclass
class Tally:
    kind: str
    trials: int = 0
    writes: int = 0
    writes_kept: int = 0
    mails: int = 0
    mails_kept: int = 0
    notes: list[str] = field(default_factory=list)


def _second_then_ctrl_c(agora: RunningAgora, data: Path, tally: Tally) -> None:
    refused = second_instance(data)
    if refused.returncode == 0 or "already running" not in refused.stderr:
        tally.notes.append("a second make run was NOT refused")
    signal_group(agora, [signal.SIGINT])


def _closed_pipe_then_ctrl_c(agora: RunningAgora, data: Path, tally: Tally) -> None:
    assert agora.process.stdout is not None
    agora.process.stdout.close()
    signal_group(agora, [signal.SIGINT])


# The one stop whose writes since the last 30-second save are lost, as documented.
LOSES_WRITES = "kill -9"

STOPS: dict[str, Callable[[RunningAgora, Path, Tally], None]] = {
    "Ctrl-C (SIGINT)": lambda a, d, t: signal_group(a, [signal.SIGINT]),
    "kill (SIGTERM to make)": lambda a, d, t: os.kill(a.process.pid, signal.SIGTERM),
    "closed terminal (SIGHUP)": lambda a, d, t: signal_group(a, [signal.SIGHUP]),
    "make run 2>&1 piped to tee, tee gone, Ctrl-C": _closed_pipe_then_ctrl_c,
    "5 signals 5 ms apart": lambda a, d, t: signal_group(
        a, [signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    ),
    "second make run, then Ctrl-C": _second_then_ctrl_c,
    "kill -9": lambda a, d, t: signal_group(a, [signal.SIGKILL]),
}


def run_kind(kind: str, trials: int, writes: int, mails: int) -> Tally:
    tally = Tally(kind)
    piped = "tee" in kind
    with tempfile.TemporaryDirectory(prefix="agora-stop-trials-") as folder:
        data = Path(folder)
        agora = make_run(data, stderr_too=piped)
        token = agora.login()
        for trial in range(trials):
            made = {
                add_event(agora, token, f"{kind} {trial} write {n}"): f"{kind} {trial} write {n}"
                for n in range(writes)
            }
            subjects = {f"{kind} {trial} mail {n}" for n in range(mails)}
            for subject in sorted(subjects):
                deliver(data, subject)
            STOPS[kind](agora, data, tally)
            wait_for_the_end(agora)
            agora = make_run(data, stderr_too=piped)
            said = "".join(agora.output)
            if kind == LOSES_WRITES and "did not stop cleanly" not in said:
                tally.notes.append(f"trial {trial}: the start did not say the stop was unclean")
            if kind != LOSES_WRITES and "did not stop cleanly" in said:
                tally.notes.append(f"trial {trial}: an unclean stop was reported")
            tally.trials += 1
            tally.writes += len(made)
            tally.writes_kept += len(events_kept(agora, token, made))
            # The mailbox first: a mail gone from it is a post already.
            waiting = waiting_subjects(data)
            tally.mails += len(subjects)
            tally.mails_kept += len(subjects & (waiting | post_titles(agora, token)))
        signal_group(agora, [signal.SIGINT])
        wait_for_the_end(agora)
    return tally


def table(tallies: list[Tally]) -> str:
    lines = [
        "| how it stopped | trials | writes acknowledged | kept | mails delivered | kept |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for t in tallies:
        lines.append(
            f"| {t.kind} | {t.trials} | {t.writes} | {t.writes_kept} | {t.mails} | {t.mails_kept} |"
        )
    notes = [f"- {t.kind}: {note}" for t in tallies for note in t.notes]
    return "\n".join(lines + notes)


def faults(tallies: list[Tally]) -> list[str]:
    """What the trials lost that their stop must keep, and what they noted."""
    found = []
    for t in tallies:
        if t.kind != LOSES_WRITES and t.writes_kept < t.writes:
            found.append(f"{t.kind}: {t.writes - t.writes_kept} of {t.writes} writes lost")
        if t.mails_kept < t.mails:
            found.append(f"{t.kind}: {t.mails - t.mails_kept} of {t.mails} mails lost")
        found += [f"{t.kind}: {note}" for note in t.notes]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stop_trials", description=__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--writes", type=int, default=10)
    parser.add_argument("--mails", type=int, default=3)
    parser.add_argument("--kinds", nargs="*", default=list(STOPS), choices=list(STOPS))
    arguments = parser.parse_args(argv)
    started = time.monotonic()
    tallies = []
    for kind in arguments.kinds:
        tallies.append(run_kind(kind, arguments.trials, arguments.writes, arguments.mails))
        print(table(tallies[-1:]).splitlines()[2], flush=True)
    print(table(tallies))
    print(f"({time.monotonic() - started:.0f} s)")
    lost = faults(tallies)
    for fault in lost:
        print(f"stop trials: {fault}", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
