"""Whether the embedded AWS that `make run` restored already holds what its start makes there.

A start makes sure of the KMS key under its alias, the two queues, the sender's SES domain and
the token secret (chalicelib/local.py, `ensure_*` and `share_token_secret`): on a first start that
creates them; on a restart the snapshot brought them back, and the five calls (four AWS clients
made for them alone, a tenth of a restart's CPU) would change nothing. The embedded AWS lives in
this process, so its backends are read here directly, in the account and region the calls would
reach, as moto's server finds them for a request. Anything not found exactly as wanted (another
alias, prefix, sender or secret value, since the last run) answers False, and the start makes
its calls as before.
"""

from __future__ import annotations

import os
from typing import Any


def embedded_aws_holds(settings: Any, restored: bool = True) -> bool:
    """True when the embedded AWS holds the KMS key under `settings.kms_key_id` (an alias), both
    queues, the sender's domain as an SES identity and the token secret with the value set;
    False at once when it was not `restored` from a snapshot (it is empty then)."""
    if not restored:
        return False
    try:
        account, region = _account_and_region()
        return (
            _kms_alias_held(settings.kms_key_id, account, region)
            and _queues_held([settings.mailbox_queue, settings.notify_queue], account, region)
            and _domain_held(settings.sender_address.rsplit("@", 1)[1], account, region)
            and _token_secret_held(settings, account, region)
        )
    except Exception:  # moto's internals not as expected: make the calls, which always work
        return False


def _account_and_region() -> tuple[str, str]:
    """The account moto's server gives this process's requests (BaseResponse.get_current_account:
    MOTO_ACCOUNT_ID, else the access key's), and the region its clients name."""
    from moto.iam.models import get_account_id_from

    from chalicelib.aws import session

    account = os.environ.get("MOTO_ACCOUNT_ID") or get_account_id_from(
        os.environ["AWS_ACCESS_KEY_ID"]
    )
    region = session().get_config_variable("region")
    if not region:
        raise LookupError("no region")
    return account, str(region)


def _kms_alias_held(key_id: str, account: str, region: str) -> bool:
    if not key_id.startswith("alias/"):
        return True  # a key id or ARN: the start makes nothing for it
    from moto.kms.models import kms_backends

    return bool(kms_backends[account][region].alias_exists(key_id))


def _queues_held(names: list[str], account: str, region: str) -> bool:
    from moto.sqs.models import sqs_backends

    queues = sqs_backends[account][region].queues
    return all(name in queues for name in names)


def _domain_held(domain: str, account: str, region: str) -> bool:
    from moto.ses.models import ses_backends

    return domain.lower() in ses_backends[account][region].email_identities


def _token_secret_held(settings: Any, account: str, region: str) -> bool:
    from chalicelib.signing_keys import REFERENCE_PREFIX

    value = settings.token_secret.get_secret_value() if settings.token_secret else ""
    if value.startswith(REFERENCE_PREFIX):
        return True  # a reference: the start stores nothing
    if not value:
        return False
    from moto.secretsmanager.models import secretsmanager_backends

    backend = secretsmanager_backends[account][region]
    stored = backend.get_secret_value(settings.token_secret_id, "", "")
    return bool(stored.get("SecretString") == value)
