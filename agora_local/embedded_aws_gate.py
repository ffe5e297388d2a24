"""The embedded AWS's door (CONTRACT §2): it answers only requests signed with make run's key pair.

moto's server checks no credentials and answers CORS preflights from any origin, so any local
user, and any web page a browser lets call localhost, could read every password hash and make
itself an administrator. In front of moto's WSGI app this gate:

- refuses every request that carries an `Origin` header: only browsers send one, and the
  embedded AWS serves none (no CORS answer, no preflight);
- lets `/moto-api/` (moto's data dump, its reset, the mail SES accepted) through only with HTTP
  Basic `ACCESS_KEY:SECRET` of the pair;
- checks every other request's SigV4 signature as AWS does: the access key must be the pair's,
  and the signature, computed again here with botocore's own signer over the request as
  received, must be the one sent (within AWS's 15 minutes of clock skew). Query-string
  (presigned) signatures are not accepted: nothing of Agora's uses them.

A refusal is a 403 shaped as AWS's own, so that botocore raises the ClientError AWS would
(UnrecognizedClientException, InvalidSignatureException, …), which the CLI explains.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import make_server

from agora_local.key_pair import KeyPair

# AWS refuses a signature made more than 15 minutes from its own clock.
ALLOWED_SKEW = timedelta(minutes=15)
MOTO_API = "/moto-api"
MOTO_RECORDER = MOTO_API + "/recorder"
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/"
    r"(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9\-;]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
_TIMESTAMP = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused, in AWS's words: the error code of the JSON protocols and of
    the XML ones (query, rest-xml), and the message."""

    json_code: str
    xml_code: str
    message: str


MISSING = Refusal(
    "MissingAuthenticationTokenException",
    "MissingAuthenticationToken",
    "Request is missing Authentication Token: sign it with the key pair make run printed",
)
UNKNOWN_KEY = Refusal(
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "The security token included in the request is invalid: use the key pair make run printed",
)


def _bad_signature(why: str) -> Refusal:
    return Refusal("InvalidSignatureException", "SignatureDoesNotMatch", why)


def request_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    """The request's headers from a WSGI environ, by lower-case name."""
    headers = {}
    for name, value in environ.items():
        if name.startswith("HTTP_"):
            headers[name[5:].replace("_", "-").lower()] = str(value)
        elif name in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers[name.replace("_", "-").lower()] = str(value)
    return headers


@dataclass(frozen=True)
class SentRequest:
    """A request as it came, its `raw_path` and `query` still percent-encoded."""

    method: str
    raw_path: str
    query: str
    headers: Mapping[str, str]
    body: bytes


def signature_refusal(sent: SentRequest, key_pair: KeyPair, now: datetime) -> Refusal | None:
    """None when the request is signed (SigV4, Authorization header) with `key_pair`; else why
    not."""
    headers = sent.headers
    authorization = headers.get("authorization")
    if not authorization:
        return MISSING
    parsed = _AUTHORIZATION.fullmatch(authorization.strip())
    if parsed is None:
        return _bad_signature("The Authorization header is not an AWS4-HMAC-SHA256 signature")
    if not hmac.compare_digest(parsed["key"].encode(), key_pair.access_key.encode()):
        return UNKNOWN_KEY
    signed = parsed["signed"].split(";")
    stamp = headers.get("x-amz-date", "")
    if "x-amz-date" not in signed or "host" not in signed or not stamp.startswith(parsed["date"]):
        return _bad_signature("The signature must cover host and an X-Amz-Date of its own day")
    try:
        signed_at = datetime.strptime(stamp, _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        return _bad_signature("X-Amz-Date is not a timestamp such as 20261128T101500Z")
    if abs(now - signed_at) > ALLOWED_SKEW:
        return _bad_signature("Signature expired: signed more than 15 minutes from now")
    declared = headers.get("x-amz-content-sha256")
    if declared is not None and declared != hashlib.sha256(sent.body).hexdigest():
        return _bad_signature("The body is not the one X-Amz-Content-SHA256 names")
    expected = _expected_signature(sent, key_pair, parsed, signed, stamp)
    if expected is None or not hmac.compare_digest(expected, parsed["signature"]):
        return _bad_signature(
            "The request signature we calculated does not match the signature you provided"
        )
    return None


def _expected_signature(
    sent: SentRequest, key_pair: KeyPair, parsed: re.Match[str], signed: list[str], stamp: str
) -> str | None:
    """The signature botocore's signer makes of this request with the pair's secret (None when
    a header it names was not sent)."""
    headers = sent.headers
    if any(name not in headers for name in signed):
        return None
    url = f"http://{headers['host']}{sent.raw_path}" + (f"?{sent.query}" if sent.query else "")
    request = AWSRequest(
        method=sent.method,
        url=url,
        headers={name: headers[name] for name in signed},
        data=sent.body,
    )
    request.context["timestamp"] = stamp
    signer_class = S3SigV4Auth if parsed["service"] == "s3" else SigV4Auth
    signer = signer_class(
        Credentials(key_pair.access_key, key_pair.secret_key), parsed["service"], parsed["region"]
    )
    # What the client signed must be what botocore signs: the same headers, nothing left out.
    if signer.signed_headers(signer.headers_to_sign(request)) != parsed["signed"]:
        return None
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))


def basic_auth_matches(authorization: str | None, key_pair: KeyPair) -> bool:
    """True for HTTP Basic `ACCESS_KEY:SECRET` of the pair."""
    scheme, _, encoded = (authorization or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    wanted = f"{key_pair.access_key}:{key_pair.secret_key}".encode()
    return hmac.compare_digest(given, wanted)


def _read_body(environ: dict[str, Any]) -> bytes:
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    if environ.get("wsgi.input_terminated"):  # chunked: werkzeug ends the stream
        return bytes(stream.read())
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return bytes(stream.read(length)) if length > 0 else b""


StartResponse = Callable[..., Any]


class AwsGate:
    """WSGI middleware in front of moto's app: see the module's docstring."""

    def __init__(
        self,
        app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]],
        key_pair: KeyPair,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.app = app
        self.key_pair = key_pair
        self.now = now

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if "HTTP_ORIGIN" in environ:
            return _plain(start_response, "403 Forbidden", "the embedded AWS serves no browser")
        path = str(environ.get("PATH_INFO", ""))
        if path.startswith(MOTO_RECORDER):
            # Off: it would change state on a GET and write every request, mailbox passwords
            # included, to a file of its own (make run's data lasts by its snapshot instead).
            return _plain(start_response, "404 Not Found", "moto's recorder is off in make run")
        if path == MOTO_API or path.startswith(MOTO_API + "/"):
            if basic_auth_matches(environ.get("HTTP_AUTHORIZATION"), self.key_pair):
                return self.app(environ, start_response)
            return _plain(
                start_response,
                "401 Unauthorized",
                "HTTP Basic ACCESS_KEY:SECRET of the key pair make run printed",
                [("WWW-Authenticate", 'Basic realm="agora-local", charset="UTF-8"')],
            )
        body = _read_body(environ)
        headers = request_headers(environ)
        raw = urlsplit(str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or path))
        sent = SentRequest(
            str(environ.get("REQUEST_METHOD", "GET")),
            raw.path,
            str(environ.get("QUERY_STRING", "")),
            headers,
            body,
        )
        refusal = signature_refusal(sent, self.key_pair, self.now())
        if refusal is not None:
            return _aws_error(start_response, refusal, headers)
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


def _plain(
    start_response: StartResponse,
    status: str,
    text: str,
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    body = (text + "\n").encode()
    start_response(
        status,
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        + (extra or []),
    )
    return [body]


def _aws_error(
    start_response: StartResponse, refusal: Refusal, headers: Mapping[str, str]
) -> list[bytes]:
    """The refusal as AWS writes it for the request's protocol (JSON: DynamoDB, KMS, SQS, …;
    XML: SES, STS, S3, …); `x-amzn-ErrorType` names it for the REST-JSON ones too."""
    if "json" in headers.get("content-type", "") or "x-amz-target" in headers:
        code = refusal.json_code
        body = json.dumps({"__type": code, "message": refusal.message}).encode()
        content_type = "application/x-amz-json-1.0"
    else:
        code = refusal.xml_code
        body = (
            "<ErrorResponse><Error><Type>Sender</Type>"
            f"<Code>{code}</Code><Message>{escape(refusal.message)}</Message>"
            "</Error><RequestId>agora-local</RequestId></ErrorResponse>"
        ).encode()
        content_type = "text/xml"
    start_response(
        "403 Forbidden",
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("x-amzn-ErrorType", code),
        ],
    )
    return [body]


class GatedMotoServer(ThreadedMotoServer):
    """moto's threaded server with the gate in front of its app (moto's own `_server_entry`,
    which builds the app it serves, with the app wrapped)."""

    def __init__(self, key_pair: KeyPair, ip_address: str, port: int) -> None:
        super().__init__(ip_address=ip_address, port=port, verbose=False)
        self._key_pair = key_pair

    def _server_entry(self) -> None:
        app = AwsGate(DomainDispatcherApplication(create_backend_app), self._key_pair)
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()
