"""The rejection notice's failures have owners (CONTRACT §9 `noticeSent`): a notice the drain could
not send leaves its entry's `noticeSent` false and counts `RejectionNoticeNotSent` by reason for
the operator; a sender the decider could not check (DNS) is counted too. And the notice reads the
mailbox's group through the planner's per-poll read, not once more."""

from __future__ import annotations

from chalicelib import deps
from tests.mail import test_rejection_notices as notices
from tests.mail.test_rejection_notices import DOMAIN, log_of, push, raw_mail, verifier

world = notices.world  # the notices' community (a fixture)


class CountingGroups:
    """The configured groups, counting each read of one group."""

    def __init__(self) -> None:
        self.real = deps.groups()
        self.reads: list[str] = []

    def get(self, group_id: str):
        self.reads.append(group_id)
        return self.real.get(group_id)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def test_under_verify_a_rejected_mail_reads_its_group_once_for_plan_and_notice(world, client):
    """A member without the right to post, under `verify`: the planner reads the group (the
    mailbox's inbound address, the permission) and the notice's check of the sender needs the
    same address; one read serves both."""
    groups = CountingGroups()
    raw = raw_mail("ann@example.org", "Not allowed here", to=f"closed@{DOMAIN}")
    assert "rejected 1" in push(raw, f"closed@{DOMAIN}", verifier=verifier(), groups=groups)
    assert log_of(client, world, world.closed)["Not allowed here"]["status"] == "rejected"
    assert groups.reads.count(world.closed) == 1
