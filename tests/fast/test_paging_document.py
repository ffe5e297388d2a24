"""The document says what `offset` a paged list takes as the API reads it (CONTRACT §7: absent,
`0` or empty is from the start). Schemathesis (seed 9) sent `offset=` to the unapproved comments,
which the API answered from the start while the document allowed only an integer."""

from __future__ import annotations

import jsonschema
import pytest

from chalicelib.schemas.common import GuidPageQuery, IntPageQuery

pytestmark = pytest.mark.fast


def documented(model: type, value: object) -> bool:
    schema = model.model_json_schema(by_alias=True)["properties"]["offset"]
    return jsonschema.Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize("model", [IntPageQuery, GuidPageQuery])
def test_an_empty_offset_is_from_the_start_in_the_api_and_the_document(model):
    assert model.model_validate({"offset": ""}).offset is None
    assert documented(model, "")


def test_an_integer_offset_is_documented_and_a_word_is_not():
    assert IntPageQuery.model_validate({"offset": "7"}).offset == 7
    assert documented(IntPageQuery, 7)
    assert not documented(IntPageQuery, "seven")


def test_an_empty_mail_log_status_is_every_entry_in_the_api_and_the_document():
    """Schemathesis (seed 16, 20 examples) sent `status=`, answered with every entry, which the
    document's enumeration of outcomes did not allow."""
    from pydantic import ValidationError

    from chalicelib.schemas.mail_log import MailLogQuery

    schema = MailLogQuery.model_json_schema(by_alias=True)["properties"]["status"]
    valid = jsonschema.Draft202012Validator(schema).is_valid
    assert MailLogQuery.model_validate({"status": ""}).status is None and valid("")
    assert MailLogQuery.model_validate({"status": "failed"}).status == "failed" and valid("failed")
    assert not valid("bogus")
    with pytest.raises(ValidationError):
        MailLogQuery.model_validate({"status": "bogus"})
