"""`make restore STAGE=prod TABLE=posts TIME=2026-11-26T08:00:00Z`: one table back to a point in
time, and the stack switched onto it.

DynamoDB restores a table only into a new table. So:

1. `RestoreTableToPointInTime` from `agora-<stage>-<stem>` into `agora-<stage>-<stem>.<time>`
   (a dot never appears in a stem, so the name cannot meet another table's; the functions' IAM
   grants cover `agora-<stage>-<stem>.*`: infra/build.py), on-demand, encrypted;
2. wait until it is ACTIVE, then give it what the stack gives its tables and a restore does not
   carry over: point-in-time recovery, deletion protection, the TTL attribute;
3. update the stack with its previous template and two parameters changed: `TableNames` (the
   restored tables' names, comma-separated; every function's AGORA_TABLE_NAMES, read by
   chalicelib/settings.py `table_name`, which takes a table's stem from its name) and
   `SettingsDigest` (infra.rollout: without it no function would publish a version, and every
   alias would keep the old environment). Every function then reads and writes the restored
   table, and the DynamoDB throttles alarm names it (infra.alarms). `make deploy` keeps the
   parameter (UsePreviousValue) until it is set again.

The switch moves every alias at once (DeployAllAtOnce for that update: no 10-minute canary
leaving the API's writes on the damaged table), then make restore checks every alias and lists
the damaged table's items the restored one lacks or holds otherwise (the writes after the
restore time, to copy back). A restore that outlasts the 2-hour wait is resumed by the same
command: a target table that exists is waited for, never restored again.

The damaged table is left as it was, under its own name, for a person to compare, copy from or
delete; the stack's resource is still that table (its alarms, its retention). Restoring it again
(`make restore TABLE=posts TIME=…`) restores from the table the stack names now. `TABLE=posts
TIME=original` points the stack back at `agora-<stage>-posts` without restoring anything.
The outbox is not restored: its stream drives drain-outbox, and it holds a week of deliveries.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from infra.deploy import DeployError, require_live_aliases
from infra.rollout import SETTINGS_DIGEST, settings_digest

# make deploy's emergency switch (infra.rollout): set by a restore, back to a canary at the next
# make deploy (a switch for one deploy: infra.deploy_parameters).
ALL_AT_ONCE = "DeployAllAtOnce"
NOT_RESTORED = {"outbox": "its stream drives drain-outbox; it holds a week of deliveries only"}
PARAMETER = "TableNames"


class RestoreError(Exception):
    """One line for the operator."""


def parameters() -> dict[str, Any]:
    return {
        PARAMETER: {
            "Type": "String",
            "Default": "",
            "Description": "Tables restored under another name, comma-separated (make restore "
            "sets it; every function's AGORA_TABLE_NAMES)",
        }
    }


def parse_names(value: str, prefix: str) -> dict[str, str]:
    """TableNames as stem -> table (Settings.table_name reads it the same way)."""
    from chalicelib.settings import table_names

    return table_names(value, prefix)


def format_names(names: dict[str, str]) -> str:
    """The restored tables' names: each holds its stem (`<prefix><stem>.<time>`)."""
    return ",".join(table for _, table in sorted(names.items()))


def parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RestoreError(
            f"TIME must be an ISO time such as 2026-11-26T08:00:00Z (got {text!r})"
        ) from None
    if moment.tzinfo is None:
        raise RestoreError(f"TIME must say its time zone, such as a final Z for UTC (got {text!r})")
    return moment.astimezone(UTC)


def restored_name(prefix: str, stem: str, moment: datetime) -> str:
    return f"{prefix}{stem}.{moment.strftime('%Y%m%dT%H%M%SZ')}"


def _stack_parameters(cloudformation: Any, stack: str) -> dict[str, str]:
    [found] = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    return {p["ParameterKey"]: p.get("ParameterValue", "") for p in found.get("Parameters", [])}


def _original_template(cloudformation: Any, stack: str) -> dict[str, Any]:
    """The stack's template as deployed (before the SAM transform): what SettingsDigest hashes."""
    from infra import yaml_text

    body = cloudformation.get_template(StackName=stack, TemplateStage="Original")["TemplateBody"]
    return dict(yaml_text.load(body)) if isinstance(body, str) else dict(body)


def restore(session: Any, stage: str, stem: str, when: str) -> str:
    """Restore, prepare, switch the stack; answers the table the stack now names."""
    prefix = f"agora-{stage}-"
    stack = f"agora-{stage}"
    if stem in NOT_RESTORED:
        raise RestoreError(f"{stem} is not restored: {NOT_RESTORED[stem]}")
    cloudformation = session.client("cloudformation")
    current = _stack_parameters(cloudformation, stack)
    if PARAMETER not in current:
        raise RestoreError(f"{stack} has no {PARAMETER} parameter: run make deploy first")
    if SETTINGS_DIGEST not in current:
        raise RestoreError(
            f"{stack} has no {SETTINGS_DIGEST} parameter, so no function would see the restored "
            "table: run make deploy first"
        )
    names = parse_names(current[PARAMETER], prefix)
    dynamodb = session.client("dynamodb")
    if when == "original":
        names.pop(stem, None)
        target = f"{prefix}{stem}"
    else:
        moment = parse_time(when)
        source = names.get(stem, f"{prefix}{stem}")
        target = restored_name(prefix, stem, moment)
        try:
            original = dynamodb.describe_table(TableName=f"{prefix}{stem}")["Table"]
        except dynamodb.exceptions.ResourceNotFoundException:
            raise RestoreError(f"{stack} has no table {prefix}{stem}") from None
        restore_into(dynamodb, stack, source, target, moment)
        prepare(dynamodb, original["TableName"], target)
        names[stem] = target
    print(f"{stack}: {PARAMETER}={format_names(names) or '(none)'}", flush=True)
    changed = {PARAMETER: format_names(names)}
    if ALL_AT_ONCE in current:
        # Every alias at once, the API's too: a canary would leave 90% of the API's writes on
        # the damaged table for 10 minutes while the jobs read the restored one.
        changed[ALL_AT_ONCE] = "true"
    changed[SETTINGS_DIGEST] = settings_digest(
        _original_template(cloudformation, stack), {**current, **changed}
    )
    cloudformation.update_stack(
        StackName=stack,
        UsePreviousTemplate=True,
        Parameters=[
            {"ParameterKey": key, "ParameterValue": changed[key]}
            if key in changed
            else {"ParameterKey": key, "UsePreviousValue": True}
            for key in current
        ],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    cloudformation.get_waiter("stack_update_complete").wait(
        StackName=stack, WaiterConfig={"Delay": 10, "MaxAttempts": 360}
    )
    try:
        require_live_aliases(session, stack)
    except DeployError as error:
        raise RestoreError(str(error)) from None
    if when != "original":
        switched = datetime.now(UTC).isoformat(timespec="seconds")
        print(
            f"{stack}: writes to {source} after {moment.isoformat()} and until {switched} (the "
            f"switch) are not in {target}: " + writes_to_copy_back(dynamodb, source, target),
            flush=True,
        )
    return target


def restore_into(dynamodb: Any, stack: str, source: str, target: str, moment: datetime) -> None:
    """Restore `source` as of `moment` into `target` and wait until it is active; a restore an
    earlier run started (the table exists) is waited for again, not started again."""
    from botocore.exceptions import WaiterError

    try:
        status = dynamodb.describe_table(TableName=target)["Table"]["TableStatus"]
    except dynamodb.exceptions.ResourceNotFoundException:
        status = None
    if status is None:
        print(f"{stack}: restoring {source} as of {moment.isoformat()} into {target}", flush=True)
        dynamodb.restore_table_to_point_in_time(
            SourceTableName=source,
            TargetTableName=target,
            RestoreDateTime=moment,
            BillingModeOverride="PAY_PER_REQUEST",
            SSESpecificationOverride={"Enabled": True, "SSEType": "KMS"},
        )
    else:
        print(f"{stack}: resuming: {target} exists already ({status})", flush=True)
    try:
        dynamodb.get_waiter("table_exists").wait(
            TableName=target, WaiterConfig={"Delay": 20, "MaxAttempts": 360}
        )
    except WaiterError:
        raise RestoreError(
            f"{target} is still being restored after 2 hours (a large table takes longer): run "
            "the same make restore again, which waits for it and goes on"
        ) from None


# Items compared before the list is cut short (a listing for a person, not a migration).
LISTED = 50


def writes_to_copy_back(dynamodb: Any, damaged: str, restored: str) -> str:
    """The items of the damaged table that the restored one lacks or holds otherwise: the
    writes after the restore time (and the damage itself), for a person to copy back or not.
    One scan of the damaged table, the restored items read 100 keys a call."""
    schema = dynamodb.describe_table(TableName=damaged)["Table"]["KeySchema"]
    keys = [k["AttributeName"] for k in schema]
    differ: list[str] = []
    count = 0
    for page in dynamodb.get_paginator("scan").paginate(TableName=damaged):
        items = page["Items"]
        for start in range(0, len(items), 100):
            chunk = items[start : start + 100]
            found = _batch_get(dynamodb, restored, [{k: i[k] for k in keys} for i in chunk])
            for item in chunk:
                key = json.dumps({k: item[k] for k in keys}, sort_keys=True)
                if found.get(key) != item:
                    count += 1
                    if len(differ) < LISTED:
                        differ.append(key)
    if not count:
        return "none of its items differs from the restored table"
    more = f" (the first {LISTED} listed)" if count > LISTED else ""
    return (
        f"{count} item(s) of it differ from the restored table{more}; copy back those the "
        "damage did not make: " + ", ".join(differ)
    )


def _batch_get(dynamodb: Any, table: str, keys: list[dict[str, Any]]) -> dict[str, Any]:
    """The items of `table` at `keys`, by their key as JSON (unprocessed keys asked again)."""
    names = list(keys[0]) if keys else []
    found: dict[str, Any] = {}
    request: dict[str, Any] = {table: {"Keys": keys}}
    while request:
        answer = dynamodb.batch_get_item(RequestItems=request)
        for item in answer.get("Responses", {}).get(table, []):
            found[json.dumps({k: item[k] for k in names}, sort_keys=True)] = item
        request = answer.get("UnprocessedKeys") or {}
    return found


def prepare(dynamodb: Any, original: str, restored: str) -> None:
    """What the stack's tables have and a restored table does not: PITR, deletion protection,
    the original's TTL."""
    dynamodb.update_continuous_backups(
        TableName=restored,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
    )
    protected = dynamodb.describe_table(TableName=original)["Table"].get(
        "DeletionProtectionEnabled", False
    )
    if protected:
        dynamodb.update_table(TableName=restored, DeletionProtectionEnabled=True)
    ttl = dynamodb.describe_time_to_live(TableName=original).get("TimeToLiveDescription", {})
    if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and ttl.get("AttributeName"):
        dynamodb.update_time_to_live(
            TableName=restored,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.restore", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--stage", required=True, choices=("dev", "prod"))
    parser.add_argument("--table", required=True, help="the table's stem: posts, users, …")
    parser.add_argument("--time", required=True, help="ISO time with its zone, or `original`")
    args = parser.parse_args(argv)
    import boto3

    try:
        if not args.table:
            raise RestoreError("TABLE must name a table's stem, such as posts")
        table = restore(boto3.session.Session(), args.stage, args.table, args.time)
    except RestoreError as error:
        print(f"make restore: {error}", file=sys.stderr)
        return 2
    print(f"agora-{args.stage}: the stack now uses {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
