"""Every function of the packaged stack is rehearsed (or says why not): a new function gets its
trigger's events here, or the reason the rehearsal cannot run it."""

from __future__ import annotations

from tests.rehearsal.stage import functions_of

REHEARSED = {
    "APIHandler": "test_deploy.py",
    "DispatchMailPolls": "test_mail_in.py",
    "PollMailbox": "test_mail_in.py",
    "DrainOutbox": "test_outbox_and_digests.py",
    "SendDigests": "test_outbox_and_digests.py",
    "DeliverDigests": "test_outbox_and_digests.py",
    "DeliverNotifications": "test_notifications.py",
    "SesFeedback": "test_feedback_and_purge.py",
    "PurgeComments": "test_feedback_and_purge.py",
    "Migrate": "test_deploy.py",
    "PreTraffic": "test_deploy.py",
    "MailVerdict": "test_mail_push.py",
    "ReceiveMail": "test_mail_push.py",
    "CheckAliases": "test_check_aliases.py",
}
NOT_REHEARSED: dict[str, str] = {}


def test_every_function_of_the_stack_is_rehearsed_or_says_why_not(stage):
    functions = set(functions_of(stage.template))
    assert functions == set(REHEARSED) | set(NOT_REHEARSED)
