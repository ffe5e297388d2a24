"""A smoke flow of the API against tables that already exist (made by the packaged stack).

Run as `python -m tests.support.smoke` with AWS_ENDPOINT_URL and the stage's AGORA_* variables
set; it creates no table, so a table or index missing from the stack fails it. Exit 0 = pass.
"""

from __future__ import annotations

import json
import sys

from chalicelib import deps
from tests.support import REPO_ROOT


def main() -> int:
    from chalice.test import Client

    from app import app

    demo = json.loads((REPO_ROOT / "demo" / "community.json").read_text())
    deps.fixture_service().load(demo)
    root = next(g for g in demo["groups"] if g["parentId"] is None)
    garden = next(g for g in demo["groups"] if g["slug"] == "gardening")
    admin = demo["users"][0]
    checks: list[tuple[str, int, int]] = []
    with Client(app, stage_name="dev", project_dir=str(REPO_ROOT)) as client:

        def call(method: str, path: str, body=None, token=None) -> tuple[int, dict]:
            headers = {"Content-Type": "application/json", **({"X-Auth": token} if token else {})}
            response = getattr(client.http, method)(
                path, headers=headers, body=json.dumps(body) if body else None
            )
            return response.status_code, json.loads(response.body)

        status, body = call(
            "post",
            "/api/v1/en_US/security/login",
            {"email": admin["email"], "password": admin["password"]},
        )
        token = body["object"]
        flow = [
            ("get", "/api/v1/en_US/system-page/home-page", None),
            ("get", f"/api/v1/en_US/post/list/{root['id']}", None),
            ("get", f"/api/v1/en_US/comment/post/list/{garden['id']}/unapproved", None),
            ("get", f"/api/v1/en_US/comment/post/list/{garden['id']}/deleted", None),
            ("get", f"/api/v1/en_US/comment/post/list/{garden['id']}/spam-reports", None),
            ("get", f"/api/v1/en_US/event/list/upcoming/{garden['id']}", None),
            ("get", f"/api/v1/en_US/connector/local/list/group/{garden['id']}", None),
            ("get", f"/api/v1/en_US/feed/settings/{garden['id']}", None),
            ("get", "/api/v1/en_US/profile", None),
            ("get", f"/api/v1/en_US/connector/email-to-post/{garden['id']}/log", None),
            (
                "put",
                f"/api/v1/en_US/connector/email-to-post/{garden['id']}",
                {
                    "serverName": "pop.example.org",
                    "serverPort": None,
                    "serverUsername": "box",
                    "serverPassword": "s3cret",
                    "isEnabled": True,
                    "isSSL": True,
                    "deleteProcessed": True,
                },
            ),
        ]
        for method, path, payload in flow:
            status, body = call(method, path, payload, token)
            checks.append((f"{method.upper()} {path}", status, 200))
    failures = [c for c in checks if c[1] != c[2]]
    for name, status, _expected in checks:
        print(f"{status} {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
