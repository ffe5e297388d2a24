"""One function of the packaged stack, run as Lambda runs it: `app.<handler>(event, context)` in a
process whose environment is exactly the function's (tests/infra/test_infra.py builds it from the
template, with the stack's references resolved against moto).

    python -m tests.support.packaged_function invoke HANDLER EVENT_JSON TIMEOUT_SECONDS
    python -m tests.support.packaged_function setup POP3_PORT USER PASSWORD
    python -m tests.support.packaged_function chunk

`invoke` prints the handler's answer as JSON. `setup` (run with the API function's environment,
as the API would write it) points the demo's gardening group's email-to-post at a POP3 mailbox
and subscribes Sam (instant email) and Pat (daily digest) to its new posts; `chunk` prints a
notification chunk for Mia, as the fan-out queues it.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

from tests.support import REPO_ROOT

DEMO = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
GARDENING = next(g["id"] for g in DEMO["groups"] if g["slug"] == "gardening")
USERS = {u["email"].split("@")[0]: u["id"] for u in DEMO["users"]}
INSTANT, DIGEST = 1, 2


class LambdaContext:
    """What Lambda's context object offers that Agora reads."""

    def __init__(self, function_name: str, timeout_seconds: int) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self.function_name = function_name
        self._ends = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return int((self._ends - time.monotonic()) * 1000)


def invoke(handler: str, event: dict[str, Any], timeout_seconds: int) -> Any:
    import app

    function = getattr(app, handler.removeprefix("app."))
    return function(event, LambdaContext(handler, timeout_seconds))


def setup(pop3_port: int, user: str, password: str) -> None:
    from chalicelib import deps
    from chalicelib.aws import client
    from chalicelib.schemas.connectors import MailboxSettingsUpdate
    from chalicelib.settings import get_settings
    from tests.support.notify import subscribe

    # The stack's sending identity (MailSenderDomain) in AWS; moto has no SES in CloudFormation.
    host = get_settings().public_base_url.split("://", 1)[1].split("/")[0]
    client("ses").verify_domain_identity(Domain=host)
    group = deps.groups().get(GARDENING)
    update = MailboxSettingsUpdate.model_validate(
        {
            "serverName": "127.0.0.1",
            "serverPort": pop3_port,
            "serverUsername": user,
            "serverPassword": password,
            "isEnabled": True,
            "isSSL": False,
            "deleteProcessed": True,
        }
    )
    settings = deps.mailbox_settings_service()
    settings.update_email_to_post(group, update, USERS["gus"])
    # Saved settings are due in 5 minutes; the test's schedule runs now, as after "poll now".
    settings.poll_email_to_post(group)
    subscribe(USERS["sam"], "group", GARDENING, 1, email=INSTANT)
    subscribe(USERS["pat"], "group", GARDENING, 1, email=DIGEST)


def chunk() -> str:
    from chalicelib.domain.announcements import PostCreated
    from chalicelib.services.notify.delivery import Recipient, chunk_body

    post = next(p for p in DEMO["posts"] if p["groupId"] == GARDENING)
    return chunk_body(
        PostCreated(post["id"], GARDENING, post["authorId"]),
        [Recipient(USERS["mia"], email_alert_id=INSTANT, reason="All new group posts")],
    )


def main(argv: list[str]) -> int:
    command = argv[1]
    if command == "invoke":
        print(json.dumps(invoke(argv[2], json.loads(argv[3]), int(argv[4])), default=str))
    elif command == "setup":
        setup(int(argv[2]), argv[3], argv[4])
    elif command == "chunk":
        print(chunk())
    else:
        raise SystemExit(f"unknown command {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
