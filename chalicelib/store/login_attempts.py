"""Sign-in attempts per account, per source address and in all, in fixed 15-minute windows, to
throttle password guessing without letting a guesser lock the owner out (items expire by TTL).

One item per account and window holds both counts: `total`, and one `s:<address>` attribute per
source address. Taking an attempt is one conditional UpdateItem on it, so a sign-in costs that
and the user's lookup, and parallel guesses never take more attempts than the limits allow.

A source the owner signed in from is remembered in an item of its own, `<email>#known#<source>`,
expiring by TTL (and read as expired from its `expires`, since TTL deletes late); it is read
only when an attempt was refused, so the owner's usual sign-in costs one write more, not a read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pynamodb.attributes import NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.aws import client, error_code
from chalicelib.domain.audit import AuditEntry
from chalicelib.domain.ports.people import LoginAttemptStore
from chalicelib.domain.users import SignInAttempt, TakenAttempt
from chalicelib.store import outbox
from chalicelib.store.base import register, table_meta


@register
class LoginAttemptRecord(Model):
    Meta = table_meta("login-attempts")

    # `<email>#<window number>`; the stored name is the table's original key name.
    counter = UnicodeAttribute(hash_key=True, attr_name="email_lower")
    total = NumberAttribute(default=0)
    expires = TTLAttribute()


def window_of(now: datetime, window: timedelta) -> tuple[int, datetime]:
    """The number of the fixed window `now` falls in, and when that window ends."""
    seconds = int(window.total_seconds())
    number = int(now.timestamp()) // seconds
    return number, datetime.fromtimestamp((number + 1) * seconds, tz=now.tzinfo)


class LoginAttemptRepository(LoginAttemptStore):
    def take(self, attempt: SignInAttempt) -> TakenAttempt | None:
        """Count one attempt for the account from its source in the current window, unless the
        source has had `per_source` attempts on this account or the account `per_account` from
        all sources: then None, and nothing is counted."""

        number, ends = window_of(attempt.now, attempt.window)
        counter = f"{attempt.email_lower}#{number}"
        source_name = f"s:{attempt.source}"
        condition = "attribute_not_exists(#source) OR #source < :per_source"
        values = {
            ":one": {"N": "1"},
            ":per_source": {"N": str(attempt.per_source)},
            ":expires": {"N": str(int(ends.timestamp()))},
        }
        if attempt.per_account is not None:
            condition = f"(attribute_not_exists(#total) OR #total < :per_account) AND ({condition})"
            values[":per_account"] = {"N": str(attempt.per_account)}
        try:
            answer = client("dynamodb").update_item(
                TableName=LoginAttemptRecord.Meta.table_name,
                Key={"email_lower": {"S": counter}},
                UpdateExpression="ADD #total :one, #source :one SET #expires = :expires",
                ConditionExpression=condition,
                ExpressionAttributeNames={
                    "#total": "total",
                    "#source": source_name,
                    "#expires": "expires",
                },
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
            )
        except Exception as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return None
            raise
        from_source = int(answer["Attributes"][source_name]["N"])
        return TakenAttempt(counter, source_name, from_source)

    def forget_source(self, attempt: TakenAttempt) -> None:
        """The owner got in from this source: its attempts of the window no longer count, here
        nor in the account's total."""

        client("dynamodb").update_item(
            TableName=LoginAttemptRecord.Meta.table_name,
            Key={"email_lower": {"S": attempt.counter}},
            UpdateExpression="REMOVE #source ADD #total :minus",
            ExpressionAttributeNames={"#source": attempt.source_name, "#total": "total"},
            ExpressionAttributeValues={":minus": {"N": str(-attempt.from_source)}},
        )

    def is_known_source(self, email_lower: str, source: str, now: datetime) -> bool:
        found = client("dynamodb").get_item(
            TableName=LoginAttemptRecord.Meta.table_name,
            Key={"email_lower": {"S": known_key(email_lower, source)}},
            ProjectionExpression="#expires",
            ExpressionAttributeNames={"#expires": "expires"},
        )
        expires = found.get("Item", {}).get("expires", {}).get("N")
        return expires is not None and int(expires) > now.timestamp()

    def remember_source(self, email_lower: str, source: str, until: datetime) -> None:
        client("dynamodb").put_item(
            TableName=LoginAttemptRecord.Meta.table_name,
            Item={
                "email_lower": {"S": known_key(email_lower, source)},
                "expires": {"N": str(int(until.timestamp()))},
            },
        )

    def end_windows(
        self, email_lower: str, now: datetime, window: timedelta, audit: Sequence[AuditEntry] = ()
    ) -> int:
        """End the account's current window, `audit` (the change's entries) in the same
        transaction; answers the attempts it counted. A window with none (or none left: the
        owner's sign-in gave them back) is not a change: nothing is written (CONTRACT §12)."""

        number, _ = window_of(now, window)
        key = f"{email_lower}#{number}"
        found = client("dynamodb").get_item(
            TableName=LoginAttemptRecord.Meta.table_name,
            Key={"email_lower": {"S": key}},
            ConsistentRead=True,
        )
        counted = int(found.get("Item", {}).get("total", {}).get("N", "0"))
        if counted <= 0:
            return 0
        if audit:
            items = outbox.records(audit, now)
            with TransactWrite(connection=LoginAttemptRecord._get_connection().connection) as tx:
                tx.delete(LoginAttemptRecord(key))
                outbox.add_to(tx, items)
            return counted
        client("dynamodb").delete_item(
            TableName=LoginAttemptRecord.Meta.table_name, Key={"email_lower": {"S": key}}
        )
        return counted


def known_key(email_lower: str, source: str) -> str:
    return f"{email_lower}#known#{source}"
