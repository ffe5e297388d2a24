# ruff: noqa: F811 - `world`, the notification tests' fixture, is a parameter by design
"""deliver-notifications paces its instant emails on the stack's sending clock, and a chunk its
deadline cannot finish is split: the rest goes back on the queue, nobody is told twice."""

from __future__ import annotations

from chalicelib.domain.announcements import PostCreated
from chalicelib.jobs.base import Deadline
from chalicelib.jobs.notify import deliver_from_queue
from chalicelib.mail.outgoing import SendingRate
from chalicelib.services.notify.delivery import Recipient, chunk_body, parse_chunk
from tests.services.test_notify import INSTANT, email_of, world  # noqa: F401 - fixture
from tests.support.digest_fakes import FakeSlotClock
from tests.support.notify import recipients, sent_mail


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Queue:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def send(self, bodies: list[str]) -> None:
        self.bodies += bodies


def test_a_chunk_the_deadline_cannot_finish_is_split_and_the_rest_requeued(world):
    fans = [world.group_fan, world.author_fan, world.double_fan]
    event = PostCreated(world.hello, world.garden, world.ann)
    body = chunk_body(
        event,
        [Recipient(fan, email_alert_id=INSTANT, reason="All new group posts") for fan in fans],
    )
    clock = FakeClock()
    # One mail per step of 5 s.
    pacer = SendingRate(0.2, FakeSlotClock(), instant=True, clock=clock, sleep=clock.sleep)
    # Out of time from the start: a delivery still does one step, so every chunk moves on.
    deadline = Deadline(lambda: 0, margin_ms=0)
    queue = Queue()
    [report] = deliver_from_queue([body], deadline=deadline, pacer=pacer, requeue=queue)
    assert report["emailed"] == 1
    assert recipients(sent_mail()) == [email_of(world, world.group_fan)]
    [rest] = queue.bodies
    assert [r.user_id for r in parse_chunk(rest)[1]] == [world.author_fan, world.double_fan]

    # The rest, and the whole chunk again (SQS delivers at least once): each fan told once.
    deliver_from_queue([rest, body], pacer=pacer, requeue=queue)
    assert recipients(sent_mail()) == sorted(email_of(world, fan) for fan in fans)
    assert len(queue.bodies) == 1
    # Three mails at 0.2 a second: at least two intervals of 5 s between them.
    assert clock.now >= 10
