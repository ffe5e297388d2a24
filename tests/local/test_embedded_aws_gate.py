"""`make run`'s embedded AWS answers only its key pair, and never a browser (CONTRACT §2): the
attacks of issue 47 (a page's `Origin: https://evil.example` Scan of every password hash, an
unsigned or wrongly signed call, an open `/moto-api/`) against the gated server."""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from botocore import UNSIGNED
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from agora_local.embedded_aws import start_moto_server, stop_moto_server
from agora_local.key_pair import KeyPair
from tests.support import suite_key_pair

TABLE = "gate-secrets"
EVIL = "https://evil.example"


@dataclass
class Gated:
    host: str
    port: int
    pair: KeyPair

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, service: str, pair: KeyPair | None = None, **config: object) -> object:
        pair = pair or self.pair
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=pair.access_key,
            aws_secret_access_key=pair.secret_key,
            config=Config(retries={"max_attempts": 1}, **config),
        )

    def send(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(method, path, body=body or None, headers=headers or {})
            response = connection.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            connection.close()

    def signed_scan(self, extra: dict[str, str] | None = None) -> tuple[bytes, dict[str, str]]:
        """A DynamoDB Scan of the table, signed with the pair as botocore signs (headers to
        send, `extra` among the signed ones)."""
        body = json.dumps({"TableName": TABLE}).encode()
        request = AWSRequest(
            method="POST",
            url=self.endpoint + "/",
            data=body,
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": "DynamoDB_20120810.Scan",
                **(extra or {}),
            },
        )
        credentials = Credentials(self.pair.access_key, self.pair.secret_key)
        SigV4Auth(credentials, "dynamodb", "us-east-1").add_auth(request)
        return body, dict(request.headers.items())


@pytest.fixture(scope="module")
def gated() -> Iterator[Gated]:
    pair = suite_key_pair()
    server = start_moto_server(pair)
    host, port = server.get_host_and_port()
    aws = Gated(host, port, pair)
    aws.client("dynamodb").create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    aws.client("dynamodb").put_item(
        TableName=TABLE, Item={"pk": {"S": "root"}, "hash": {"S": "$argon2id$secret"}}
    )
    yield aws
    stop_moto_server(server)


def refusal(call: object) -> tuple[int, str]:
    with pytest.raises(ClientError) as raised:
        call()  # type: ignore[operator]
    response = raised.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"]


@pytest.mark.slow
def test_requests_signed_with_the_pair_are_answered_in_every_protocol(gated):
    """JSON (DynamoDB, SQS), query/XML (SES) and REST-XML with a body (S3, its own signer)."""
    items = gated.client("dynamodb").scan(TableName=TABLE)["Items"]
    assert items == [{"pk": {"S": "root"}, "hash": {"S": "$argon2id$secret"}}]
    queue = gated.client("sqs").create_queue(QueueName="gate-queue")["QueueUrl"]
    gated.client("sqs").send_message(QueueUrl=queue, MessageBody="a body & more/+=")
    gated.client("ses").verify_domain_identity(Domain="gate.example")
    assert "gate.example" in gated.client("ses").list_identities()["Identities"]
    s3 = gated.client("s3")
    s3.create_bucket(Bucket="gate-bucket")
    s3.put_object(Bucket="gate-bucket", Key="a key/with spaces+plus", Body=b"\x00\x01 body")
    got = s3.get_object(Bucket="gate-bucket", Key="a key/with spaces+plus")["Body"].read()
    assert got == b"\x00\x01 body"


@pytest.mark.slow
def test_an_unsigned_request_is_refused(gated):
    unsigned = gated.client("dynamodb", signature_version=UNSIGNED)
    assert refusal(lambda: unsigned.scan(TableName=TABLE)) == (
        403,
        "MissingAuthenticationTokenException",
    )
    status, _, body = gated.send(
        "POST",
        "/",
        json.dumps({"TableName": TABLE}).encode(),
        {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.Scan"},
    )
    assert status == 403 and b"argon2id" not in body


@pytest.mark.slow
def test_a_wrong_key_or_a_wrong_secret_is_refused(gated):
    stranger = KeyPair.new()
    assert refusal(lambda: gated.client("dynamodb", stranger).scan(TableName=TABLE)) == (
        403,
        "UnrecognizedClientException",
    )
    assert refusal(lambda: gated.client("ses", stranger).list_identities()) == (
        403,
        "InvalidClientTokenId",
    )
    guessed = KeyPair(gated.pair.access_key, "not-the-secret")
    assert refusal(lambda: gated.client("dynamodb", guessed).scan(TableName=TABLE)) == (
        403,
        "InvalidSignatureException",
    )
    assert refusal(lambda: gated.client("ses", guessed).list_identities()) == (
        403,
        "SignatureDoesNotMatch",
    )


@pytest.mark.slow
def test_a_signed_request_altered_on_the_way_is_refused(gated):
    body, headers = gated.signed_scan()
    assert gated.send("POST", "/", body, headers)[0] == 200
    other_table = body.replace(TABLE.encode(), b"gate-others")
    assert gated.send("POST", "/", other_table, headers)[0] == 403
    put = {**headers, "X-Amz-Target": "DynamoDB_20120810.PutItem"}
    assert gated.send("POST", "/", body, put)[0] == 403


@pytest.mark.slow
def test_a_page_like_request_is_refused_preflight_and_post(gated):
    """The audit's request: a page at evil.example asks for every password hash."""
    status, headers, _ = gated.send(
        "OPTIONS",
        "/",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-amz-target,authorization",
        },
    )
    assert status == 403
    assert not [name for name in headers if name.startswith("access-control-")]
    # Even signed with the pair: a browser's request is never answered.
    body, signed = gated.signed_scan({"Origin": EVIL})
    status, headers, answer = gated.send("POST", "/", body, signed)
    assert status == 403 and b"argon2id" not in answer
    assert not [name for name in headers if name.startswith("access-control-")]
    body, signed = gated.signed_scan()
    status, _, answer = gated.send("POST", "/", body, {**signed, "Origin": "null"})
    assert status == 403 and b"argon2id" not in answer


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.mark.slow
def test_moto_api_answers_only_basic_auth_with_the_pair(gated):
    pair = gated.pair
    status, headers, body = gated.send("GET", "/moto-api/data.json")
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert b"argon2id" not in body
    for wrong in (basic(pair.access_key, "guess"), basic("someone", pair.secret_key)):
        assert gated.send("GET", "/moto-api/data.json", headers=wrong)[0] == 401
    # SigV4 is not Basic: a signed request for the dump is refused too.
    assert gated.send("POST", "/moto-api/reset", headers=basic("x", "y"))[0] == 401
    allowed = basic(pair.access_key, pair.secret_key)
    assert gated.send("GET", "/moto-api/data.json", headers={**allowed, "Origin": EVIL})[0] == 403

    status, _, body = gated.send("GET", "/moto-api/data.json", headers=allowed)
    assert status == 200 and "dynamodb" in json.loads(body)
    # The refused reset above reset nothing.
    assert gated.client("dynamodb").scan(TableName=TABLE)["Count"] == 1


@pytest.mark.slow
def test_motos_recorder_is_off_whoever_asks(gated, tmp_path, monkeypatch):
    """Issue 58: /moto-api/recorder/start-recording changed state on a GET and wrote every
    request after it (mailbox passwords in clear) to a world-readable file."""
    monkeypatch.setenv("MOTO_RECORDER_FILEPATH", str(tmp_path / "recording"))
    allowed = basic(gated.pair.access_key, gated.pair.secret_key)
    for method in ("GET", "POST"):
        for headers in ({}, allowed):
            for action in ("start-recording", "download-recording", "stop-recording"):
                status, _, body = gated.send(
                    method, f"/moto-api/recorder/{action}", headers=headers
                )
                assert status == 404 and b"recorder is off" in body, (method, action, body)
    gated.client("dynamodb").scan(TableName=TABLE)
    assert list(tmp_path.iterdir()) == []
