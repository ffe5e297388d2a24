"""`make package`: `chalice package` for the Lambda runtime pinned in .chalice/config.json, with
exactly the locked dependencies.

Chalice takes the runtime from the Python that runs it (3.11 here would deploy python3.11) and
resolves requirements.txt itself (top-level pins only; for another Python it falls back to
building sdists with the local compiler). Instead, this installs requirements.lock (every package,
every hash) for the pinned runtime's interpreter and Linux platform with pip, checks that every
compiled module is built for that Python, runs Chalice with that runtime and no requirements of
its own, and adds the installed packages to the zip.

    python -m infra.package --stage dev --merge-template infra/dev.yaml build/package
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
DEPENDENCIES = ROOT / "build" / "lambda-dependencies"
# Lambda's Amazon Linux 2023 has glibc 2.34: every manylinux wheel up to that runs there.
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux2014_x86_64")
NOT_SHIPPED = ("bin/", "__pycache__/")


def pinned_runtime() -> str:
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    runtime = config.get("lambda_runtime", "")
    if not runtime.startswith("python3."):
        raise SystemExit(".chalice/config.json: lambda_runtime must name a python3.x runtime")
    return str(runtime)


def install_dependencies(runtime: str) -> Path:
    import hashlib

    version = runtime.removeprefix("python")
    # Installed already for this lock and runtime: the same bytes, by the lock's hashes.
    stamp = DEPENDENCIES / ".installed-from"
    wanted = runtime + " " + hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return DEPENDENCIES
    shutil.rmtree(DEPENDENCIES, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(DEPENDENCIES)]
    command += ["--no-deps", "--require-hashes", "-r", str(LOCK), "--prefer-binary"]
    command += ["--python-version", version, "--implementation", "cp"]
    command += ["--abi", "cp" + version.replace(".", "")]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run(command, check=True)
    tag = "cpython-" + version.replace(".", "") + "-x86_64-linux-gnu.so"
    wrong = [
        str(path.relative_to(DEPENDENCIES))
        for path in DEPENDENCIES.rglob("*.so")
        if not path.name.endswith((tag, ".abi3.so"))
    ]
    if wrong:
        raise SystemExit(f"built for another Python than {runtime}: {', '.join(wrong)}")
    stamp.write_text(wanted)
    return DEPENDENCIES


def add_to_zip(zip_path: Path, directory: Path) -> None:
    with zipfile.ZipFile(zip_path, "a", zipfile.ZIP_DEFLATED) as archive:
        present = set(archive.namelist())
        for path in sorted(directory.rglob("*")):
            name = path.relative_to(directory).as_posix()
            if path.is_dir() or name in present or name.startswith(NOT_SHIPPED):
                continue
            if "/__pycache__/" in name or name == ".installed-from":
                continue
            archive.write(path, name)


def main(argv: list[str]) -> int:
    from chalice.cli import main as chalice_main
    from chalice.config import Config
    from chalice.deploy.packager import BaseLambdaDeploymentPackager

    runtime = pinned_runtime()
    dependencies = install_dependencies(runtime)
    # Chalice has no setting for either; both are read through these two methods only.
    Config.lambda_python_version = property(lambda _self: runtime)  # type: ignore[assignment,method-assign]
    BaseLambdaDeploymentPackager._get_requirements_filename = (  # type: ignore[method-assign]
        lambda self, project_dir: self._osutils.joinpath(project_dir, "no-such-requirements.txt")
    )
    sys.argv = ["chalice", "package", *argv]
    try:
        chalice_main()
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    add_to_zip(Path(argv[-1]) / "deployment.zip", dependencies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
