"""Poison announcements (issue 47): a notification whose email can never be built.

A mailed subject holding U+2028 was once stored as a post title; every email about that post then
failed to build (the email package refuses the header) and the event was delivered again,
forever. A deterministic build error (`domain.letters.MessageUnbuildable`, never an AWS fault)
now ends here: the chunk of recipients it failed for goes, once, to the notification queue's
dead-letter queue with its `reason`, with an error line in the log and the metric
`NotificationDeadLettered` (the dead-letter queue's alarm calls an operator). AWS faults are not
dead-lettered: they raise, and the event is delivered again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from chalicelib import metrics
from chalicelib.domain.ports.notify import Fanout
from chalicelib.logs import get_logger

log = get_logger("notify")

MAX_REASON_CHARS = 2000


def send_dead_letter(
    queue: Fanout | None, chunk: str, reasons: Iterable[str], occurrence_id: str
) -> None:
    """Send `chunk` (services/notify.chunk_body: the event and its recipients) with the build
    errors as its `reason`; raises when the queue refuses it. `queue` None: logged only."""
    body = json.loads(chunk)
    count = len(body["recipients"])
    body["reason"] = f"the email cannot be built: {'; '.join(sorted(set(reasons)))}"[
        :MAX_REASON_CHARS
    ]
    if queue is not None:
        queue.send([json.dumps(body)])
    log.error(
        "notification cannot be built; sent to the dead-letter queue, not retried",
        extra={"occurrence": occurrence_id, "recipients": count, "reason": body["reason"]},
    )
    metrics.emit("NotificationDeadLettered", count)
