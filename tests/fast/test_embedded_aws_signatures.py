"""The embedded AWS's SigV4 check (agora_local/embedded_aws_gate.py) on requests botocore signs,
with the clock given: AWS's 15 minutes of skew, and each signed part of the request."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from agora_local.embedded_aws_gate import SentRequest, signature_refusal
from agora_local.key_pair import KeyPair

PAIR = KeyPair("AGORALOCALTESTKEY123", "a-secret-of-the-pair")
BODY = json.dumps({"TableName": "users"}).encode()


def signed(path: str = "/", query: str = "") -> tuple[dict[str, str], datetime]:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:8001" + path + (f"?{query}" if query else ""),
        data=BODY,
        headers={"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "X.Scan"},
    )
    SigV4Auth(Credentials(PAIR.access_key, PAIR.secret_key), "dynamodb", "us-east-1").add_auth(
        request
    )
    headers = {name.lower(): value for name, value in request.headers.items()}
    headers["host"] = "127.0.0.1:8001"
    stamp = datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return headers, stamp


def check(headers, now, path="/", query="", body=BODY, method="POST"):
    return signature_refusal(SentRequest(method, path, query, headers, body), PAIR, now)


def test_a_signature_is_good_for_fifteen_minutes_either_way():
    headers, at = signed()
    assert check(headers, at) is None
    assert check(headers, at + timedelta(minutes=14)) is None
    assert check(headers, at - timedelta(minutes=14)) is None
    late = check(headers, at + timedelta(minutes=16))
    assert late is not None and "expired" in late.message
    assert check(headers, at - timedelta(minutes=16)) is not None


def test_each_signed_part_of_the_request_counts():
    headers, at = signed("/a%20path/", "b=2&a=1")
    assert check(headers, at, "/a%20path/", "b=2&a=1") is None
    assert check(headers, at, "/another/", "b=2&a=1") is not None
    assert check(headers, at, "/a%20path/", "b=3&a=1") is not None
    assert check(headers, at, "/a%20path/", "b=2&a=1", body=BODY + b" ") is not None
    assert check(headers, at, "/a%20path/", "b=2&a=1", method="PUT") is not None
    assert check({**headers, "x-amz-target": "X.PutItem"}, at, "/a%20path/", "b=2&a=1")
    assert check({**headers, "host": "evil.example:8001"}, at, "/a%20path/", "b=2&a=1")
    other_day = {**headers, "x-amz-date": "20200101T000000Z"}
    assert check(other_day, at, "/a%20path/", "b=2&a=1") is not None


def test_a_missing_a_foreign_or_a_malformed_authorization_is_refused():
    headers, at = signed()
    missing = {k: v for k, v in headers.items() if k != "authorization"}
    assert check(missing, at).json_code == "MissingAuthenticationTokenException"
    foreign = {
        **headers,
        "authorization": headers["authorization"].replace(PAIR.access_key, "AKIAEXAMPLE"),
    }
    assert check(foreign, at).json_code == "UnrecognizedClientException"
    for broken in ("Bearer x", "AWS4-HMAC-SHA256 Credential=", headers["authorization"][:-1]):
        refused = check({**headers, "authorization": broken}, at)
        assert refused is not None and refused.json_code == "InvalidSignatureException"
