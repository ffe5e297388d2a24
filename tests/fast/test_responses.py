"""Response mapping without a server: AWS failures no store handled become the status of CONTRACT §6
(503 with Retry-After when a retry may succeed, 409 `state` for a lost race, else 500), results and
errors become the envelope, and Chalice's own error answers are enveloped too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError
from chalice import Response

from chalicelib.api.routing.responses import (
    aws_failure,
    enveloped,
    error_response,
    json_response,
    success_response,
    unexpected_response,
)
from chalicelib.envelope import GENERIC_ERROR
from chalicelib.errors import Conflict, NotFound, ServiceUnavailable, ValidationFailed
from chalicelib.schemas.common import Result

ROUTE = {"route": "/api/v1/en_US/x", "method": "GET"}


def client_error(code: str, status: int = 400, reasons: list[str] | None = None) -> ClientError:
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": code},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    if reasons is not None:
        response["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    return ClientError(response, "TransactWriteItems")


class PynamoError(Exception):
    """As PynamoDB raises them: the botocore error as `cause`."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__("wrapped")
        self.cause = cause


def body_of(response: Response) -> dict[str, Any]:
    assert response.headers["Content-Type"] == "application/json"
    return json.loads(response.body)


@pytest.mark.parametrize(
    "code",
    [
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "Throttling",
    ],
)
def test_throttling_is_503_with_retry_after(code: str) -> None:
    mapped = aws_failure(client_error(code))
    assert isinstance(mapped, ServiceUnavailable)
    assert mapped.status == 503
    assert mapped.headers == {"Retry-After": "2"}


def test_a_server_error_of_aws_is_503() -> None:
    assert isinstance(aws_failure(client_error("InternalServerError", 500)), ServiceUnavailable)


@pytest.mark.parametrize(
    "error",
    [
        ConnectTimeoutError(endpoint_url="https://dynamodb.invalid"),
        EndpointConnectionError(endpoint_url="https://dynamodb.invalid"),
    ],
)
def test_a_timeout_or_unreachable_endpoint_is_503(error: Exception) -> None:
    assert isinstance(aws_failure(error), ServiceUnavailable)


def test_the_cause_under_a_pynamodb_error_is_what_is_mapped() -> None:
    assert isinstance(
        aws_failure(PynamoError(client_error("ThrottlingException"))), ServiceUnavailable
    )
    conflict = aws_failure(PynamoError(client_error("ConditionalCheckFailedException")))
    assert isinstance(conflict, Conflict)


@pytest.mark.parametrize(
    "error",
    [
        client_error("ConditionalCheckFailedException"),
        client_error("TransactionCanceledException", reasons=["ConditionalCheckFailed", "None"]),
        client_error("TransactionCanceledException", reasons=["TransactionConflict"]),
    ],
)
def test_a_write_that_lost_a_race_is_409_on_state(error: Exception) -> None:
    mapped = aws_failure(error)
    assert isinstance(mapped, Conflict)
    assert mapped.status == 409
    assert [(e.key, e.value) for e in mapped.errors] == [("state", "")]


def test_a_transaction_cancelled_by_throttling_is_503_not_409() -> None:
    error = client_error("TransactionCanceledException", reasons=["ThrottlingError", "None"])
    assert isinstance(aws_failure(error), ServiceUnavailable)


@pytest.mark.parametrize(
    "error",
    [
        ValueError("a bug"),
        KeyError("x"),
        client_error("ValidationException"),
        client_error("ResourceNotFoundException"),
        client_error("AccessDeniedException", 403),
    ],
)
def test_other_errors_are_not_aws_failures(error: Exception) -> None:
    assert aws_failure(error) is None


def test_an_unexpected_error_answers_500_with_the_generic_message_only() -> None:
    response = unexpected_response(RuntimeError("secret detail"), ROUTE)
    assert response.status_code == 500
    body = body_of(response)
    assert body["success"] is False
    assert body["message"] == GENERIC_ERROR
    assert "secret detail" not in response.body


def test_an_unhandled_aws_failure_answers_its_mapped_status_and_headers() -> None:
    response = unexpected_response(client_error("ThrottlingException"), ROUTE)
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "2"
    assert body_of(response)["success"] is False


def test_a_domain_error_answers_its_status_and_field_errors() -> None:
    response = error_response(NotFound("postId", "abc", "post"))
    assert response.status_code == 404
    body = body_of(response)
    assert body["success"] is False
    assert [(e["key"], e["value"]) for e in body["errors"]] == [("postId", "abc")]


def test_a_validation_failure_answers_what_was_sent_as_object() -> None:
    error = ValidationFailed.one("title", "", "must not be empty", {"title": ""})
    body = body_of(error_response(error))
    assert body["object"] == {"title": ""}
    assert body["errors"] == [{"key": "title", "value": "", "message": "must not be empty"}]


def test_a_result_model_is_the_object_of_a_success_envelope_in_camel_case() -> None:
    response = success_response(Result(count=3))
    assert response.status_code == 200
    body = body_of(response)
    assert body["success"] is True
    assert body["errors"] == []
    assert body["object"] == Result(count=3).model_dump(mode="json", by_alias=True)


def test_a_response_of_the_handler_is_answered_as_it_is() -> None:
    own = Response(body="<p>hi</p>", status_code=304, headers={"ETag": '"x"'})
    assert success_response(own) is own


def test_an_answer_with_a_lone_surrogate_is_escaped_rather_than_failing() -> None:
    response = json_response(200, {"object": "a\ud800b"})
    response.body.encode("utf-8")  # would raise if the surrogate were kept raw
    assert json.loads(response.body) == {"object": "a\ud800b"}


def test_an_answer_keeps_other_characters_unescaped() -> None:
    assert "é" in json_response(200, {"object": "é"}).body


@pytest.mark.parametrize(
    ("chalice_status", "status", "message"),
    [
        (405, 405, "This method is not allowed on this path."),
        (415, 415, "The request body must be JSON, sent with Content-Type: application/json."),
        (403, 403, "Not found."),
        (413, 413, "The request body is too large."),
        (500, 500, "Something went wrong on our side; it has been logged."),
    ],
)
def test_chalices_own_errors_are_enveloped(chalice_status: int, status: int, message: str) -> None:
    own = Response(
        body={"Code": "X", "Message": "chalice's words"},
        status_code=chalice_status,
        headers={"Allow": "GET, PUT", "X-Other": "dropped"},
    )
    response = enveloped(own)
    assert response.status_code == status
    assert body_of(response)["message"] == message
    assert response.headers["Allow"] == "GET, PUT"
    assert "X-Other" not in response.headers


def test_an_unknown_chalice_error_keeps_its_message() -> None:
    own = Response(body={"Code": "X", "Message": "Gone"}, status_code=410)
    assert body_of(enveloped(own))["message"] == "Gone"


@pytest.mark.parametrize(
    "own",
    [
        Response(body={"Code": "X"}, status_code=200),
        Response(body="plain", status_code=404),
        Response(body={"success": False}, status_code=400),
    ],
)
def test_answers_that_are_not_chalices_own_errors_are_left_alone(own: Response) -> None:
    assert enveloped(own) is own
