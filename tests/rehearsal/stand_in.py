"""Lambda's Invoke, GetFunctionConfiguration and GetAlias, and CodeDeploy's hook status, which moto
cannot serve for the rehearsal's functions (they run outside moto's Lambda, which runs code only in
Docker; its CodeDeploy has no lifecycle hooks): a small HTTP server speaking their wire protocols,
for the PreTraffic hook and check-aliases. An Invoke of the API's version or alias is the rehearsal's
own API function (its process, its role); each status CodeDeploy is told is kept. It checks no
signature: these calls are checked against the caller's role by the rehearsal's policy check
(tests/rehearsal/iam.py), as every call is."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


class StandIn:
    def __init__(self, invoke_api: Any) -> None:
        self.invoke_api = invoke_api
        # Each function's $LATEST configuration, as Lambda's GetFunctionConfiguration answers it
        # (check-aliases compares it with the alias's version), and the functions whose alias
        # `live` runs a version of older code (a deploy that bypassed make deploy).
        self.configurations: dict[str, dict[str, Any]] = {}
        self.behind: set[str] = set()
        self.told: list[dict[str, Any]] = []
        self.invoked: list[str] = []
        # A broken new version: its answer to every call is a 500 (the serving alias answers).
        self.broken_version = False
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                parts = url.path.split("/")  # /2015-03-31/functions/NAME/configuration
                function = unquote(parts[3]) if len(parts) > 4 else ""
                if function not in stand_in.configurations:
                    self.send_error(404)
                elif parts[4] == "configuration":
                    qualifier = parse_qs(url.query).get("Qualifier", ["$LATEST"])[0]
                    self.answer(stand_in.configuration(function, qualifier))
                elif parts[4] == "aliases":
                    arn = stand_in.configurations[function]["FunctionArn"]
                    self.answer({"AliasArn": f"{arn}:{parts[5]}", "Name": parts[5],
                                 "FunctionVersion": "1"})  # fmt: skip
                else:
                    self.send_error(404)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                url = urlsplit(self.path)
                if url.path.startswith("/2015-03-31/functions/"):
                    function = unquote(url.path.split("/")[3])
                    qualifier = parse_qs(url.query).get("Qualifier", [""])[0]
                    answer, error = stand_in.invoke(function, qualifier, json.loads(body))
                    self.answer(answer, {"X-Amz-Executed-Version": "1",
                                         **({"X-Amz-Function-Error": error} if error else {})})  # fmt: skip
                elif self.headers.get("X-Amz-Target", "").endswith(
                    "PutLifecycleEventHookExecutionStatus"
                ):
                    told = json.loads(body)
                    stand_in.told.append(told)
                    self.answer({"lifecycleEventHookExecutionId": told["lifecycleEventHookExecutionId"]})  # fmt: skip
                else:
                    self.send_error(404)

            def answer(self, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def configuration(self, function: str, qualifier: str) -> dict[str, Any]:
        """$LATEST's configuration, or version 1's: the same, unless the function is behind."""
        found = {**self.configurations[function], "Version": qualifier}
        if qualifier != "$LATEST" and function in self.behind:
            found["CodeSha256"] = "b2xkZXIgY29kZSwgcHVibGlzaGVkIGJlZm9yZSB0aGUgbGFzdCBkZXBsb3k="
        return found

    def invoke(self, function: str, qualifier: str, event: dict[str, Any]) -> tuple[Any, str]:
        target = f"{function}:{qualifier}" if qualifier else function
        self.invoked.append(target)
        if self.broken_version and not target.endswith(":live"):
            return {"statusCode": 500, "headers": {}, "body": "{}"}, ""
        done = self.invoke_api(event)
        if done.error is not None:
            return done.error, "Unhandled"
        return done.result, ""

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
