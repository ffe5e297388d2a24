"""What Lambda does for a function of the packaged stack, for the rehearsal: its code from the
built zip, its environment from the translated template, its role's credentials, one process
per function that stays warm between invocations (tests/rehearsal/bootstrap.py is its runtime).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import sysconfig
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.running import this_clock
from tests.support.sam_stack import REGION, Resolver

BOOTSTRAP = Path(__file__).with_name("bootstrap.py")


def extract(zip_path: Path, task_root: Path) -> None:
    """The deployment package as Lambda unpacks it into /var/task."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(task_root)


def compiled_stand_ins(task_root: Path, into: Path) -> list[str]:
    """The zip's compiled packages are built for Lambda's Python, not the one running the
    tests: each top-level package or module holding an extension this Python cannot load is
    linked from the test environment, which holds the same pinned version (checked against
    the zip's dist-info). Everything else, Agora's code and every pure-Python dependency, boto3
    and botocore (slimmed) among them, comes from the zip."""
    import importlib.metadata
    import importlib.util

    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    foreign = sorted(
        {
            path.relative_to(task_root).parts[0]
            for path in task_root.rglob("*.cpython-*.so")
            if not path.name.endswith(suffix)
        }
    )
    into.mkdir(parents=True, exist_ok=True)
    distributions = importlib.metadata.packages_distributions()
    linked = []
    for entry in foreign:
        module = entry.split(".", 1)[0]
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, f"{module}: not installed for the tests"
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        [distribution] = distributions[module][:1]
        version = importlib.metadata.version(distribution)
        stem = distribution.replace("-", "_").lower()
        packaged = [
            p.name for p in task_root.glob("*.dist-info") if p.name.lower().startswith(stem + "-")
        ]
        assert packaged == [f"{packaged[0].split('-')[0]}-{version}.dist-info"], (
            f"{module}: the zip has {packaged}, the tests {distribution} {version}"
        )
        (into / source.name).symlink_to(source)
        linked.append(module)
    return linked


def environment(
    template: dict, resolver: Resolver, logical: str, credentials: dict[str, str], endpoint: str
) -> dict[str, str]:
    """Exactly what the function gets in AWS: the template's variables (resolved), Lambda's own
    runtime variables and its role's session credentials. Then the one thing the rehearsal's
    network differs in: every AWS service is moto's endpoint (AWS_ENDPOINT_URL)."""
    properties = template["Resources"][logical]["Properties"]
    variables = properties.get("Environment", {}).get("Variables", {})
    name = resolver.name(logical) if "FunctionName" in properties else f"agora-dev-{logical}"
    env = {key: str(resolver.resolve(value)) for key, value in variables.items()}
    env.update(
        {
            "_HANDLER": properties["Handler"],
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{properties['Runtime']}",
            "AWS_LAMBDA_FUNCTION_NAME": name,
            # Every trigger calls the alias `live`: the version AutoPublishAlias published.
            "AWS_LAMBDA_FUNCTION_VERSION": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(properties.get("MemorySize", 128)),
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
            # Lambda names a log stream by its day: today's, on the clock the tests run on.
            "AWS_LAMBDA_LOG_STREAM_NAME": f"{datetime.now(UTC):%Y/%m/%d}/[1]{uuid.uuid4().hex}",
            "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
            "AWS_SESSION_TOKEN": credentials["SessionToken"],
            "LAMBDA_TASK_ROOT": "/var/task",
            "LAMBDA_RUNTIME_DIR": "/var/runtime",
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PATH": "/usr/local/bin:/usr/bin/:/bin",
            "AWS_ENDPOINT_URL": endpoint,
        }
    )
    # The test's clock (libfaketime's variables under the date tests), as every process has.
    return {**env, **this_clock()}


def alarm_reads(template: dict, alarm: str) -> list[dict[str, Any]]:
    """The metrics the template's `alarm` reads (its own, or its metric math's), each as
    {"name": …, "dimensions": {name: value}}: what a function's metric must be filed under."""
    properties = template["Resources"][alarm]["Properties"]
    reads = [properties, *(m["MetricStat"]["Metric"] for m in properties.get("Metrics", [])
                           if "MetricStat" in m)]  # fmt: skip
    return [
        {
            "name": read["MetricName"],
            "dimensions": {d["Name"]: d["Value"] for d in read["Dimensions"]},
        }
        for read in reads
        if "MetricName" in read
    ]


@dataclass
class Invocation:
    """One invocation: the handler's result or Lambda's error, the AWS calls it made, and the
    function's log output during it."""

    result: Any = None
    error: dict[str, str] | None = None
    calls: list[dict] = field(default_factory=list)
    log: str = ""

    def metric_dimensions(self) -> dict[str, list[dict[str, str]]]:
        """Each EMF metric its log lines carry: name -> its dimensions and their values, once a
        line (what CloudWatch files the value under; an alarm must name exactly these)."""
        found: dict[str, list[dict[str, str]]] = {}
        for line in self.log.splitlines():
            if not line.startswith("{") or '"_aws"' not in line:
                continue
            document = json.loads(line)
            for directive in document["_aws"]["CloudWatchMetrics"]:
                for names in directive["Dimensions"]:
                    for metric in directive["Metrics"]:
                        dimensions = {name: document[name] for name in names}
                        found.setdefault(metric["Name"], []).append(dimensions)
        return found

    def metrics(self) -> dict[str, list[float]]:
        """The EMF metrics its log lines carry: name -> values."""
        found: dict[str, list[float]] = {}
        for line in self.log.splitlines():
            if not line.startswith("{") or '"_aws"' not in line:
                continue
            document = json.loads(line)
            for directive in document["_aws"]["CloudWatchMetrics"]:
                for metric in directive["Metrics"]:
                    value = document[metric["Name"]]
                    found.setdefault(metric["Name"], []).extend(
                        value if isinstance(value, list) else [value]
                    )
        return found


# How long past an invocation's time its answer may take to come through the pipe: Lambda has
# none, the rehearsal's pipe and a loaded machine a little.
GRACE_S = 0.5
# How long the rehearsal waits for a runtime's init (the handler's import). Lambda gives it 10 s
# and retries it in the invocation; a cold import on a loaded test machine may take longer, so
# only a runtime that died or hangs far past that fails here.
INIT_S = 120


def timed_out(request_id: str, timeout: int) -> dict[str, str]:
    """Lambda's answer for an invocation that ran out of time (what the caller, the SQS mapping,
    the async retries and the on-failure record see): the function's configured timeout, which
    is the invocation's whole duration when it is cut off."""
    return {
        "errorType": "Sandbox.Timedout",
        "errorMessage": f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds",
    }


class LambdaFunction:
    """One function's execution environment: started at its first invocation and kept warm
    between invocations, until one runs out of time (then killed, as Lambda does; the next
    invocation starts a new one, its init again)."""

    def __init__(
        self, logical: str, env: dict[str, str], timeout: int, task_root: Path, compiled: Path,
        log_path: Path,
    ) -> None:  # fmt: skip
        self.logical = logical
        self.env = env
        self.timeout = timeout
        self.task_root = task_root
        self.compiled = compiled
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.inits = 0  # how many execution environments were started (cold starts)
        self.init_calls: list[dict] = []

    def _start(self) -> None:
        read, write = os.pipe()
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                str(BOOTSTRAP),
                str(self.task_root),
                str(self.compiled),
                str(write),
            ],  # fmt: skip
            env=self.env,
            cwd=self.task_root,
            stdin=subprocess.PIPE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            pass_fds=(write,),
            text=True,
        )
        os.close(write)
        self.results = read
        self.pending = b""
        self.inits += 1
        start = self.log_path.stat().st_size
        # The AWS calls its init makes (with its role too): checked with its first invocation's.
        until, self.init_calls = time.monotonic() + INIT_S, []
        ready = self._next(until)
        while ready is not None and "call" in ready:
            self.init_calls.append(ready["call"])
            ready = self._next(until)
        log = self.log_path.read_bytes()[start:].decode(errors="replace")
        assert ready == {"ready": True}, (
            f"{self.logical}: the runtime's init did not end\n{log[-3000:]}"
        )

    def _next(self, until: float) -> dict[str, Any] | None:
        """The runtime's next message, or None when none came by `until` (time.monotonic())
        or the runtime is gone (the pipe closed: {"died": True})."""
        while b"\n" not in self.pending:
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.results], [], [], left)[0]:
                return None
            piece = os.read(self.results, 65536)
            if not piece:
                return {"died": True}
            self.pending += piece
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def invoke(self, event: dict[str, Any], remaining_ms: int | None = None) -> Invocation:
        """`remaining_ms`: the time the run has as its context reports it (Lambda's
        get_remaining_time_in_millis), when not the function's whole timeout: a run whose
        earlier part took the rest. The invocation ends there, as Lambda ends it: an answer
        not given by then (and GRACE_S for the pipe) is Lambda's timeout error, and the
        process is killed."""
        if self.process is None:
            self._start()
        assert self.process is not None and self.process.stdin is not None
        start = self.log_path.stat().st_size
        timeout_ms = min(remaining_ms or self.timeout * 1000, self.timeout * 1000)
        request = {"event": event, "request_id": str(uuid.uuid4()), "timeout_ms": timeout_ms}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        until = time.monotonic() + timeout_ms / 1000 + GRACE_S
        calls, self.init_calls = self.init_calls, []
        message = self._next(until)
        while message is not None and "call" in message:
            calls.append(message["call"])
            message = self._next(until)
        if message is None:
            self.stop()
            with self.log_path.open("a") as log:  # Lambda's own line, in the function's log
                log.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ} {request['request_id']} "
                          f"Task timed out after {self.timeout:.2f} seconds\n")  # fmt: skip
        log = self.log_path.read_bytes()[start:].decode(errors="replace")
        if message is None:
            return Invocation(None, timed_out(request["request_id"], self.timeout), calls, log)
        assert "answer" in message, f"{self.logical}: the runtime died\n{log[-3000:]}"
        answer = message["answer"]
        return Invocation(answer.get("result"), answer.get("error"), calls, log)

    def stop(self) -> None:
        """Lambda ends an execution environment without asking it (after an invocation's
        timeout, or at the end of the tier: everything it answered is already read)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            assert self.process.stdin is not None
            self.process.stdin.close()
            os.close(self.results)
            self.log.close()
            self.process = None
