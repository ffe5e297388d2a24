"""Cold start: importing the Lambda handler module in a fresh process, and the packaged zip's size.

Agora's zip is the one `make package` builds. The reference, the bare Chalice app
(bench/bare_app.py), gets a project of its own under bench/work/, so that `import app` and `chalice
package` treat it as they treat Agora.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from statistics import median

from bench.report import BENCH_DIR, REPO_ROOT, Figure

WORK_DIR = BENCH_DIR / "work"
BARE_PROJECT = WORK_DIR / "bare-app"
IMPORT_RUNS = 5
# The first `chalice package` downloads Lambda wheels; later runs reuse chalice's cache.
PACKAGE_TIMEOUT_SECONDS = 300


def bare_project() -> Path:
    """bench/work/bare-app: the bare app as a Chalice project (app.py and .chalice/config.json)."""
    (BARE_PROJECT / ".chalice").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(BENCH_DIR / "bare_app.py", BARE_PROJECT / "app.py")
    config = {"version": "2.0", "app_name": "bare", "stages": {"dev": {"api_gateway_stage": "api"}}}
    (BARE_PROJECT / ".chalice" / "config.json").write_text(json.dumps(config, indent=2))
    (BARE_PROJECT / "requirements.txt").write_text("")
    return BARE_PROJECT


def import_ms(project_dir: Path) -> float:
    """`import app` in a new interpreter, by `-X importtime`: the app module's cumulative time."""
    env = {**os.environ, "PYTHONPATH": str(project_dir)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import app"],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    for line in done.stderr.splitlines():
        # "import time:  self [us] | cumulative | imported package"; nested imports are indented.
        if line.startswith("import time:") and line.rsplit("|", 1)[-1] == " app":
            return int(line.split("|")[1]) / 1000
    raise RuntimeError(f"no `app` line in -X importtime output of {project_dir}")


def median_import_ms(project_dir: Path, runs: int = IMPORT_RUNS) -> float:
    import_ms(project_dir)  # compiles the .pyc files, which a deployed package ships
    return median(import_ms(project_dir) for _ in range(runs))


def package_mb(project_dir: Path, out_dir: Path) -> float:
    """`chalice package` of a plain project, and the size of its deployment.zip."""
    shutil.rmtree(out_dir, ignore_errors=True)
    chalice = Path(sys.executable).parent / "chalice"
    subprocess.run(
        [str(chalice), "package", "--stage", "dev", str(out_dir)],
        cwd=project_dir,
        env={**os.environ, "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")},
        capture_output=True,
        text=True,
        timeout=PACKAGE_TIMEOUT_SECONDS,
        check=True,
    )
    return (out_dir / "deployment.zip").stat().st_size / 1e6


# What any Chalice + Pydantic + PynamoDB handler must import before doing anything: the floor
# of `import app` (issue 17). Pydantic's BaseModel, since `import pydantic` alone is a lazy stub
# that loads nothing; "boto3 with the DynamoDB model": a DynamoDB client is made, which loads
# botocore's service model, as PynamoDB's first request does.
STACK_IMPORT = (
    "import chalice.app, pynamodb.models, boto3\n"
    "from pydantic import BaseModel, TypeAdapter\n"
    "boto3.session.Session().client('dynamodb', region_name='us-east-1')\n"
)
APP_IMPORT = "import app\n"
WALL_RUNS = 7


def wall_import_ms(code: str, cwd: Path = REPO_ROOT) -> float:
    """Wall time of `code` in a new interpreter, measured inside it (interpreter start excluded)."""
    timed = (
        "import time\n_started = time.perf_counter()\n"
        + code
        + "print((time.perf_counter() - _started) * 1000)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", timed],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(cwd)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def over_stack_ms(runs: int = WALL_RUNS) -> tuple[float, float]:
    """Medians of `import app` and of the bare stack, taken alternately in the same run (a busy
    machine slows both alike)."""
    wall_import_ms(APP_IMPORT)  # .pyc files, as a deployed package ships them
    wall_import_ms(STACK_IMPORT)
    app_times, stack_times = [], []
    for _ in range(runs):
        app_times.append(wall_import_ms(APP_IMPORT))
        stack_times.append(wall_import_ms(STACK_IMPORT))
    return median(app_times), median(stack_times)


def cold_start_figures() -> list[Figure]:
    import_figure = Figure(
        "cold_start_import", median_import_ms(REPO_ROOT), median_import_ms(bare_project()), "ms"
    )
    app_ms, stack_ms = over_stack_ms()
    return [import_figure, Figure("cold_start_over_stack", app_ms, stack_ms, "ms")]


# The zip `make package` makes (its Makefile's build/package).
AGORA_ZIP = REPO_ROOT / "build" / "package" / "deployment.zip"


def make_package_mb() -> float:
    """`make package` itself (the locked dependencies for the pinned runtime, trimmed; cfn-lint),
    its zip's size measured as `make package` measures it (bench/figures.py: one source for the
    manual's size and this figure). Nothing is published here: a whole `make bench` run
    publishes it once its results are written (bench/run.py), a `--only` run never."""
    from bench import figures

    subprocess.run(
        ["make", "--no-print-directory", "package"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=PACKAGE_TIMEOUT_SECONDS,
        check=True,
    )
    today = datetime.now(UTC).date().isoformat()
    return float(figures.package_figures(AGORA_ZIP, package_arch(), today)["zipMB"])


def package_arch() -> str:
    """The architecture `make package` built for (its ARCH, x86_64 by default)."""
    return os.environ.get("ARCH", "x86_64")


def package_figures() -> list[Figure]:
    try:
        agora_zip = make_package_mb()
        bare_zip = package_mb(bare_project(), WORK_DIR / "package-bare")
    except subprocess.CalledProcessError as error:
        said = (error.stderr or error.stdout or "").strip().splitlines()[-1:]
        return [Figure("package_zip_mb", None, None, "MB", f"packaging failed: {said}")]
    return [Figure("package_zip_mb", agora_zip, bare_zip, "MB")]
