"""`make run`'s running parts that stop: the scheduler thread (and its drain of the outbox), the
intake of requests, and the one orderly stop that saves first, whatever signals arrive
(agora_local/run.py starts them)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agora_local.embedded_aws import StreamState, stream_state


def records_told(arn: str) -> int:
    """The records of stream `arn` this process's drain has told. The store is imported here, not
    at the top: its table models read the settings, and make run checks those first, to name a bad
    variable in one line rather than in a traceback."""
    from chalicelib.store.outbox import records_told as told_by_the_drain

    return told_by_the_drain(arn)


class Scheduler(threading.Thread):
    """Runs each job at its schedule's next time, one at a time, until stopped."""

    def __init__(
        self,
        jobs: list[tuple[str, Any, Callable[[], Any]]],
        stopping: threading.Event | None = None,
    ) -> None:
        super().__init__(name="agora-scheduler", daemon=True)
        self.jobs = jobs
        # Set when the stop begins: the jobs' deadlines read it too (agora_local/jobs.py).
        self.stopping = stopping or threading.Event()
        # Held while a job runs; `hold` takes it for good, so no job starts after it.
        self._running = threading.Lock()
        now = datetime.now(UTC)
        self.next_runs = {name: schedule.next_after(now) for name, schedule, _ in jobs}

    def run(self) -> None:
        while not self.stopping.is_set():
            name = min(self.next_runs, key=self.next_runs.__getitem__)
            wait = (self.next_runs[name] - datetime.now(UTC)).total_seconds()
            if wait > 0 and self.stopping.wait(min(wait, 60)):
                return
            if datetime.now(UTC) < self.next_runs[name]:
                continue
            with self._running:
                if self.stopping.is_set():
                    return
                self._run_job(name)

    def _run_job(self, name: str) -> None:
        import logging

        from chalicelib.logs import get_logger

        log = get_logger("scheduler")
        schedule, job = next((s, j) for n, s, j in self.jobs if n == name)
        try:
            result = job()
            # The outbox drain runs every second: only a run that did something is news.
            level = logging.INFO if result else logging.DEBUG
            log.log(level, "scheduled job ran", extra={"job": name, "result": result})
        except Exception:
            log.exception("scheduled job failed", extra={"job": name})
        self.next_runs[name] = schedule.next_after(datetime.now(UTC))

    def hold(self, timeout: float) -> bool:
        """Start no job any more, and wait for the one running to end (True when it did within
        `timeout` seconds): what it stored is then in the next snapshot."""
        self.stopping.set()
        return self._running.acquire(timeout=timeout)

    def stop(self) -> None:
        self.stopping.set()


class OutboxDrain:
    """drain-outbox's run every second: `drain` (outbox.drain_in_process), unless every record of
    the outbox stream has been told already.

    In AWS a write to the stream triggers the drain; here the scheduler asks every second, and
    asking the embedded AWS costs three calls (DescribeStream, GetShardIterator, GetRecords: 35 ms
    of CPU each second, three quarters of an idle make run's CPU). The embedded AWS lives in this
    process, so the count of the stream's records says without a call whether any was written
    since: the drain runs when the stream holds more records than its reader has told (told
    records are committed, the reader reads the stream from its start), which includes a record
    whose telling failed, retried every second as before. Only the reader of that stream counts:
    a reader of a stream since made again (or of an earlier test's) told none of its records.
    Without the stream's state (no such stream in the embedded AWS) it always runs."""

    def __init__(
        self,
        drain: Callable[[], int],
        stream: Callable[[], StreamState | None] | None = None,
        told: Callable[[str], int] | None = None,
    ) -> None:
        self.drain = drain
        self.stream = stream or outbox_stream
        # Told by the stream's reader, the records of a restored checkpoint included.
        self.told = told or records_told

    def __call__(self) -> int:
        stream = self.stream()
        if stream is not None and self.told(stream.arn) == stream.records:
            return 0
        return self.drain()


def outbox_stream() -> StreamState | None:
    from chalicelib.settings import get_settings

    return stream_state(get_settings().table_name("outbox"))


class Intake:
    """The requests being served: counted, so that a stop waits for their answers, and refused
    once the stop has begun."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._open = True
        self._active = 0

    def enter(self) -> bool:
        with self._lock:
            if not self._open:
                return False
            self._active += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._active -= 1
            self._lock.notify_all()

    def close(self, timeout: float) -> bool:
        """Take no request any more; wait for those being served (True when all were answered
        within `timeout` seconds)."""
        with self._lock:
            self._open = False
            return self._lock.wait_for(lambda: self._active == 0, timeout=timeout)


# The signals that stop make run: Ctrl-C (SIGINT to the process group), `kill` (SIGTERM, which
# make passes on to Agora as well: a stop often brings two) and a closed terminal or a dropped SSH
# session (SIGHUP): each is the one orderly stop, which saves first.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequest:
    """Remembers that a stop signal came, and lets the main thread wait for it.

    The handler only sets a flag. A Python signal handler runs in the main thread between two
    bytecodes, possibly while that thread holds a lock (a `threading.Event`'s own, inside its
    `wait`); a handler that takes the same lock waits for itself for ever. A burst of signals
    (make passing a SIGTERM on, then Ctrl-C) did exactly that with `Event.set` as the handler."""

    def __init__(self) -> None:
        self.requested = False

    def install(self) -> None:
        for number in STOP_SIGNALS:
            signal.signal(number, self._remember)

    def _remember(self, _number: int, _frame: Any) -> None:
        self.requested = True

    def wait(self, poll_seconds: float = 0.2) -> None:
        # `time.sleep` takes no lock; a signal interrupts it and the handler runs at once.
        while not self.requested:
            time.sleep(poll_seconds)


# How long a stop waits for the requests being answered and the job being run to finish.
REQUEST_DRAIN_SECONDS = 10.0
JOB_DRAIN_SECONDS = 30.0


def orderly_stop(
    snapshot: Any,
    saver: Any,
    intake: Intake,
    scheduler: Scheduler,
    server: Any,
    aws_server: Any,
    mail: Any = None,
) -> None:
    """The one stop: no further signal interrupts it. Nothing new is acknowledged (requests not
    yet read are refused, no job starts), what is being answered and the running job finish,
    the snapshot is taken of everything acknowledged, and only then do the scheduler, the API
    and the embedded AWS stop. Nothing it prints can stop the save: a message to a closed pipe
    or terminal (`make run | tee log`, whose tee the same Ctrl-C ended) is dropped: make run's
    stdout is KeepWriting (`keep_writing`, before anything is served)."""
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    print("stopping: saving the data first", flush=True)
    # The running job is told to stop starting new work (a poll leaves the rest of its mail on
    # the server for the next one), then waited for.
    scheduler.stopping.set()
    answered = intake.close(REQUEST_DRAIN_SECONDS)
    finished = scheduler.hold(JOB_DRAIN_SECONDS)
    if not answered:
        print("stopping: some requests were still being answered", flush=True)
    if not finished:
        print("stopping: a scheduled job was still running", flush=True)
    save_on_stop(snapshot, saver)
    if finished and mail is not None:
        # No job reads the local mailboxes any more: Dovecot's second of ending (its log process
        # lingers that long) is spent beside the servers' shutdown; run.py waits for it last.
        mail.stop_soon()
    scheduler.stop()
    server.server.shutdown()
    server.server.server_close()
    aws_server.stop()


def save_on_stop(snapshot: Any, saver: Any) -> None:
    """The last snapshot (the timer's saves end first: a save in progress is waited for)."""
    saver.stop()
    snapshot.save()
    print(f"data saved in {snapshot.folder}", flush=True)


class KeepWriting:
    """stdout or stderr that never raises: once its reader is gone (`make run | tee log` whose
    tee a Ctrl-C ended, a closed terminal) what is written is dropped, and make run goes on (or
    stops, and saves) as if it had been read."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return int(self._stream.write(text))
            except (OSError, ValueError):
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.gone = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def keep_writing() -> None:
    """sys.stdout and sys.stderr made KeepWriting (once)."""
    import sys

    if not isinstance(sys.stdout, KeepWriting):
        sys.stdout = KeepWriting(sys.stdout)
    if not isinstance(sys.stderr, KeepWriting):
        sys.stderr = KeepWriting(sys.stderr)
