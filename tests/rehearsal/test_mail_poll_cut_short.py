"""A poll its run's end cuts short, as AWS runs it: poll-mailbox from the built zip, with the
template's environment and only its role's permissions, polls a maildrop slower than the run has
time left (its context's remaining time) and is cut short: it ends the connection itself before
the run's end, as it must, for on AWS Lambda ends the run there, poll unrecorded. The operator's metric
MailboxPollCutShort is printed in EMF form (the only way this function files a metric: no
PutMetricData, so its role needs nothing beyond the log writes the rehearsal checks on every
invocation), registered in chalicelib/metrics.py with the unit it is written with, and filed as the
alarm `mailbox-polls-cut-short` reads it. At the third in a row the mailbox's lastError is set
(tests/jobs/test_mail_poll_cut_short.py checks the same in process)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from chalicelib.metrics import METRICS
from chalicelib.services.poll_schedule import CUT_SHORT_LIMIT
from tests.rehearsal import triggers
from tests.rehearsal.lambda_service import alarm_reads

# The run's time left when the message is taken (its context's remaining time: the rehearsal
# ends the invocation there, as Lambda does), and how long the maildrop keeps a connection
# silent before dropping it: past the run's end. The poll's connection ends before the run does
# (pop3.run_ending_at: halfway through the margin past its deadline, Deadline.from_lambda's
# remaining time less a tenth), then the poll is recorded and answered in time: 6 s leaves it
# 0.3 s for that (and the rehearsal's 0.5 s for the pipe), room on a loaded machine.
RUN_MS = 6000
DEADLINE_S = 0.9 * RUN_MS / 1000
SILENT_S = RUN_MS / 1000 + 1


@contextmanager
def slow_maildrop() -> Iterator[int]:
    """A POP3 port on loopback that accepts a connection and says nothing (no greeting) until
    SILENT_S later, then drops it; its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stopping = threading.Event()

    def hold(connection: socket.socket) -> None:
        stopping.wait(SILENT_S)
        connection.close()

    def serve() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=hold, args=(connection,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        server.join(timeout=5)
        listener.close()


def cut_short_lines(log: str) -> list[dict]:
    """The EMF documents of the function's log that carry MailboxPollCutShort."""
    found = []
    for line in log.splitlines():
        if line.startswith("{") and '"_aws"' in line and '"MailboxPollCutShort"' in line:
            found.append(json.loads(line))
    return found


def stored_mailbox(stage, group_id: str) -> dict:
    item = stage.aws("dynamodb").get_item(
        TableName="agora-dev-mailboxes", Key={"scope": {"S": group_id}}, ConsistentRead=True
    )
    return item["Item"]


def test_a_poll_the_runs_end_cuts_short_is_counted_and_the_third_in_a_row_is_the_mailboxs_timeout(
    stage,
):
    reads = alarm_reads(stage.template, "MailboxPollsCutShortAlarm")
    with slow_maildrop() as port:
        made = stage.as_operator("slow-mailbox", str(port))
        key, group_id = made["mailbox"], made["group"]
        for poll in range(1, CUT_SHORT_LIMIT + 1):
            triggers.send(stage, "PollMailbox", [json.dumps({"mailboxes": [key]})])
            event, sqs = triggers.sqs_batch(stage, "PollMailbox")
            started = time.monotonic()
            polled = stage.invoke("PollMailbox", event, remaining_ms=RUN_MS)
            assert polled.error is None, polled.log[-3000:]
            # Not the platform's failure: the message is done, never delivered again.
            assert polled.result == {"batchItemFailures": []}, polled.log[-3000:]
            triggers.settle(sqs, triggers.queue_of(stage, "PollMailbox"), event, polled)
            # It waited on the maildrop past the run's deadline (and answered before the run's
            # end, or the rehearsal would have answered Lambda's timeout).
            assert time.monotonic() - started >= DEADLINE_S

            [document] = cut_short_lines(polled.log)
            [directive] = document["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "Agora"
            assert directive["Metrics"] == [{"Name": "MailboxPollCutShort", "Unit": "Count"}]
            assert METRICS["MailboxPollCutShort"] == "Count"  # registered, with that unit
            assert document["MailboxPollCutShort"] in (1, 1.0, [1], [1.0])
            for written in polled.metric_dimensions()["MailboxPollCutShort"]:
                assert {"name": "MailboxPollCutShort", "dimensions": written} in reads
            assert "mailbox poll cut short" in polled.log

            stored = stored_mailbox(stage, group_id)
            if poll < CUT_SHORT_LIMIT:
                assert "MailboxPollFailed" not in polled.metrics(), polled.log[-3000:]
                assert "last_error" not in stored, stored
                assert stored["polls_cut_short"] == {"N": str(poll)}
            else:
                assert polled.metrics()["MailboxPollFailed"] == [1.0]
                [failed] = polled.metric_dimensions()["MailboxPollFailed"]
                assert failed["Reason"] == "timeout"
                message = stored["last_error"]["S"]
                assert message.startswith("The mail server did not answer in time."), message
                assert f"its last {CUT_SHORT_LIMIT} polls ran out of time" in message
