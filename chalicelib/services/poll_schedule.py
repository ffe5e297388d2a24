"""When a mailbox is polled next (CONTRACT §9): pure decisions over a clock's `now`.

Polls follow the mail. A poll that found mail, saved settings, or "poll now" make the mailbox due
soon (5 minutes; now for "poll now", and for mail that Agora's own stop left on the server); each
poll that finds nothing doubles the wait, up to AGORA_MAIL_POLL_MAX_MINUTES. A poll that the
mailbox's own server or settings defeat waits 30 minutes, doubling with each failure in a row up
to 6 hours; the third failure in a row tells the group's administrators, once per streak. A fault
of the platform changes nothing here: the poll is retried as it was.

The state is three values stored on the mailbox (store/mailboxes.py): when it is due, how many
polls in a row found nothing, how many failed in a row.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from chalicelib.domain.mailboxes import PollState

POLL_AFTER_MAIL = timedelta(minutes=5)
FAILURE_FIRST_WAIT = timedelta(minutes=30)
FAILURE_MAX_WAIT = timedelta(hours=6)
# The failure in a row that tells the administrators (once per streak).
ALERT_AT_FAILURE = 3
# A poll that the run's end cuts short is no failure of the mailbox's and leaves it due; this many
# in a row, though, and the last is its timeout (a server too slow to finish within any run would
# otherwise hold a poller at every dispatch, lastError empty, the administrators never told).
CUT_SHORT_LIMIT = 3
# A dispatch takes what falls due before the next one could run, less this lead: a poll that
# ran a few seconds after its dispatch is due again at the dispatch of its interval, not one later.
DISPATCH_LEAD = timedelta(minutes=2)
# Doubling stops well before any wait could overflow.
_MAX_DOUBLINGS = 16


def _doubled(first: timedelta, times: int, longest: timedelta) -> timedelta:
    factor: int = 2 ** min(max(times, 0), _MAX_DOUBLINGS)
    return min(first * factor, longest)


def after_saved(now: datetime, enabled: bool) -> PollState:
    """Settings saved: due in 5 minutes (a new start: the failure streak ends with it)."""
    return PollState(now + POLL_AFTER_MAIL if enabled else None)


def after_poll_now(state: PollState, now: datetime) -> PollState:
    """ "Poll now": due at once; a failure streak goes on (nothing was fixed by asking)."""
    return replace(state, next_poll_on=now, empty_polls=0)


def after_mail(now: datetime) -> PollState:
    """A poll that found new mail: more may follow soon."""
    return PollState(now + POLL_AFTER_MAIL)


def after_stop_left_mail(now: datetime) -> PollState:
    """A poll that Agora's own stop (make run's) cut short with mail left on the server: due at
    once, so that the next run's first poll reads the rest (the stop is nothing of the mailbox's,
    nor a reason for its mail to wait an interval)."""
    return PollState(now)


def after_empty(state: PollState, now: datetime, max_wait: timedelta) -> PollState:
    """A poll that found nothing new: the wait doubles (10, 20, … minutes) up to `max_wait`."""
    empty = state.empty_polls + 1
    return PollState(now + _doubled(POLL_AFTER_MAIL, empty, max(max_wait, POLL_AFTER_MAIL)), empty)


def after_failure(state: PollState, now: datetime) -> PollState:
    """A poll the mailbox's own server or settings defeated: 30 minutes, doubling to 6 hours."""
    failures = state.failures + 1
    wait = _doubled(FAILURE_FIRST_WAIT, failures - 1, FAILURE_MAX_WAIT)
    return PollState(now + wait, state.empty_polls, failures)


def tells_administrators(before: PollState, after: PollState) -> bool:
    """The failure that reaches the third in a row, and only that one, sends the email."""
    return before.failures < ALERT_AT_FAILURE <= after.failures


def is_due(next_poll_on: datetime | None, moment: datetime) -> bool:
    """Due at `moment` (a mailbox with no time yet, written before polls had one, is due)."""
    return next_poll_on is None or next_poll_on <= moment


def dispatch_horizon(now: datetime) -> datetime:
    """What a dispatch at `now` sends: every mailbox due up to this moment."""
    return now + DISPATCH_LEAD
