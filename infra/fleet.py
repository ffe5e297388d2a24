"""The mailbox fleet each stage is declared for, and the poller's concurrency it needs.

Little's law: executions in flight = messages per second × seconds per message. A dispatch
every `interval_seconds` may find every mailbox due at once (the busiest rhythm: each one found
mail 5 minutes ago, or all were saved or migrated together), `per_message` of them to an SQS
message, polled side by side so that a message takes its slowest poll (`seconds_per_poll`: TLS
and login to a remote provider, the mail, five or six AWS calls); `headroom` covers the Lambda
start, the uneven arrival of messages and slower providers. infra/operations.py caps the SQS
trigger of poll-mailbox at `concurrency`; tests/fast/test_fleet.py fails when a declared fleet
cannot be polled within its interval at that cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chalicelib.jobs.mail_poll import MAILBOXES_PER_MESSAGE


@dataclass(frozen=True)
class Fleet:
    mailboxes: int
    seconds_per_poll: float
    interval_seconds: int = 300
    headroom: float = 2.0
    per_message: int = MAILBOXES_PER_MESSAGE

    @property
    def messages_per_interval(self) -> int:
        return math.ceil(self.mailboxes / self.per_message)

    @property
    def concurrency(self) -> int:
        """Executions the fleet needs (an SQS trigger's cap is at least 2)."""
        in_flight = self.messages_per_interval / self.interval_seconds * self.seconds_per_poll
        return max(2, math.ceil(in_flight * self.headroom))

    def mailboxes_polled(self, concurrency: int) -> int:
        """How many mailboxes `concurrency` executions poll in one interval, with no headroom."""
        messages = math.floor(concurrency * self.interval_seconds / self.seconds_per_poll)
        return messages * self.per_message

    def fits(self, concurrency: int) -> bool:
        return self.mailboxes_polled(concurrency) >= self.mailboxes


FLEETS = {
    "dev": Fleet(mailboxes=100, seconds_per_poll=2.5),
    # The size the README's cost table prices: 10,000 mailboxes.
    "prod": Fleet(mailboxes=10_000, seconds_per_poll=2.5),
}
