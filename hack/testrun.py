"""`make test`: the whole suite, phase by phase, each timed; line coverage measured in every
Python process the tests start and held to the floor in pyproject.toml.

    packages      the host's Debian packages (containerd, buildah, debootstrap, ...)
    setup         Kafka and Spark jars, the group reader, Go binaries,     } both
                  the Spark class archive                                  } at
    image         the operator and pause images for the node               } once
    stack start   Kafka x3 twice, etcd, kube-apiserver, the node } both at once
    lint          ruff, mypy, import-linter, CRDs, helm          }
    parallel      integration and e2e tests that share the stack, TEST_WORKERS sessions
                  (pytest-xdist, a test file stays on one worker, and so does each group
                  of files and tests in tests/helpers/sharing.py; each worker has its own
                  operator watching its own namespaces). One group breaks brokers and
                  plants orphans on the stack's isolated Kafka cluster, beside the rest.
    unit          tests/unit, TEST_WORKERS processes at nice 19, beside the parallel
                  phase and on into the serial one when it needs to: they take only
                  the CPU the stack's tests leave
    serial        tests marked `serial`: the API server and node restarts, the largest
                  scale tests
    paired        `serial` tests also marked `paired` (the timed fleet, the soak), each
                  on a worker
    kafka-only    the tests that need Kafka alone (tests/helpers/sharing.py KAFKA_ONLY),
                  3 sessions at nice 19 beside the serial and paired phases, which
                  left 14% and 36% of the CPU idle (the parallel phase 0.2%)
    stack stop    only when this run started the stack
    coverage      combine, report, compare with the floor

Every phase runs even when an earlier one failed (after setup), so one run reports all
that is wrong; the exit status is non-zero when any phase failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / ".dev" / "test-run"
COVERAGE_DATA = REPO / ".dev" / "coverage"
SLOWEST = 30
# pytest's exit status when a selection collected no test (e.g. -k matching none of a phase).
NO_TESTS = 5


@dataclass
class Phase:
    name: str
    seconds: float
    ok: bool
    note: str = ""


class Phases:
    """Each phase's wall time and result; phases may run on threads."""

    def __init__(self) -> None:
        self.done: list[Phase] = []
        self._lock = threading.Lock()

    def run(self, name: str, step: Callable[[], str | None]) -> bool:
        """Run one phase; `step` returns a note or raises. Said as it starts and ends."""
        # One write a line: phases on threads would run their lines together.
        sys.stdout.write(f"=== {name}\n")
        sys.stdout.flush()
        started = time.monotonic()
        ok, note = True, ""
        try:
            note = step() or ""
        except Exception as err:  # any failure ends the phase, not the run
            ok, note = False, f"{type(err).__name__}: {err}"
        phase = Phase(name, time.monotonic() - started, ok, note)
        with self._lock:
            self.done.append(phase)
        sys.stdout.write(
            f"=== {name}: {'ok' if ok else 'FAILED'} in {phase.seconds:.0f} s {note}\n"
        )
        sys.stdout.flush()
        return ok

    def table(self, total: float) -> str:
        lines = [f"{'phase':<12} {'seconds':>8}  result"]
        for p in self.done:
            lines.append(f"{p.name:<12} {p.seconds:>8.0f}  {'ok' if p.ok else 'FAILED'} {p.note}")
        overlap = "setup and image overlap, so do stack start and lint; unit and kafka-only"
        overlap += " run beside the rest"
        lines.append(f"{'total':<12} {total:>8.0f}  (wall; {overlap})")
        return "\n".join(lines)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.done)


def sh(
    argv: list[str],
    env: dict[str, str] | None = None,
    allow: tuple[int, ...] = (),
    log: Path | None = None,
) -> None:
    """Run a command; its output goes to ours, or to `log` (printed whole when it fails)."""
    print("+ " + shlex.join(argv) + (f" > {log}" if log else ""), flush=True)
    with open(log, "w") if log else contextlib.nullcontext() as out:
        code = subprocess.call(
            argv, cwd=REPO, env={**os.environ, **(env or {})}, stdout=out, stderr=out
        )
    if code != 0 and code not in allow:
        if log:
            print(log.read_text(), flush=True)
        raise RuntimeError(f"exit {code}" + (f"; {log}" if log else ""))


def pytest(
    name: str,
    args: list[str],
    extra: list[str],
    env: dict[str, str] | None = None,
    *,
    nice: int = 0,
    log: Path | None = None,
) -> None:
    """pytest under coverage, its results kept for the slowest-tests table."""
    sh(
        [
            *(["nice", "-n", str(nice)] if nice else []),
            sys.executable,
            "-m",
            "coverage",
            "run",
            "-m",
            "pytest",
            *args,
            f"--junitxml={OUT / (name + '.xml')}",
            *extra,
        ],
        env,
        allow=(NO_TESTS,),
        log=log,
    )


def slowest(count: int = SLOWEST) -> str:
    timed: list[tuple[float, str]] = []
    for report in sorted(OUT.glob("*.xml")):
        # pytest's own report of this run, written a moment ago: not untrusted input.
        for case in ET.parse(report).getroot().iter("testcase"):  # noqa: S314
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            timed.append((float(case.get("time") or 0), f"[{report.stem}] {name}"))
    timed.sort(reverse=True)
    return "\n".join(f"{t:8.1f} s  {name}" for t, name in timed[:count])


def coverage_report() -> str:
    """Every process's data combined; the total against the floor, which may only rise."""
    py = [sys.executable, "-m", "coverage"]
    sh([*py, "combine", "--quiet"])
    per_file = subprocess.run(
        [*py, "report", "--fail-under=0", "--sort=cover"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (OUT / "coverage.txt").write_text(per_file)
    total = float(
        subprocess.run(
            [*py, "report", "--format=total", "--fail-under=0", "--precision=1"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    floor = float(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["coverage"]["report"][
            "fail_under"
        ]
    )
    said = f"line coverage {total:.1f}% of operator/ and spark-jobs/ (floor {floor:.1f}%)"
    if total < floor:
        raise RuntimeError(f"{said}: below the floor; per file: {OUT / 'coverage.txt'}")
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hack/testrun.py", description=__doc__)
    parser.add_argument("--workers", type=int, default=int(os.environ.get("TEST_WORKERS", "4")))
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed to every pytest")
    args = parser.parse_args(argv)
    extra = [a for a in args.pytest_args if a != "--"]

    sys.path.insert(0, str(REPO / "hack"))
    from devstack import build, image
    from devstack.stack import Stack

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    shutil.rmtree(COVERAGE_DATA, ignore_errors=True)
    COVERAGE_DATA.mkdir(parents=True)
    # Where every measured process writes (pyproject's [tool.coverage.run] data_file):
    # absolute, since the processes the tests start run from other directories.
    os.environ["KAFKA_RETENTION_COVERAGE"] = str(COVERAGE_DATA)
    began = time.monotonic()
    phases = Phases()
    stack = Stack()
    started: list[bool] = []

    def setup() -> None:
        build.setup(images=False)
        # The local Spark JVMs the tests start (their sessions, their operators', CLI
        # runs) live minutes: C1 alone compiles far less than C1 then C2, and the serial
        # collector runs no threads of its own, which leaves the 2 cores to the tests
        # (test_plan_pipeline and test_client_properties: 154 s -> 128 s alone); the
        # class archive halves each one's start-up. Pods run the image's defaults.
        if "SPARK_SUBMIT_OPTS" not in os.environ:
            os.environ.update(build.spark_env())

    def images() -> str:
        return ", ".join(built.name for built in image.node_images().load)

    def stop() -> None:
        stack.down()

    # The image needs only the host's packages (buildah, debootstrap): from an empty cache
    # its base and RUN steps are mostly download and unpacking, beside the Go builds'
    # compiling rather than after it (from empty caches: setup 633 s, then image 214 s).
    built: list[bool] = []
    image_build = threading.Thread(target=lambda: built.append(phases.run("image", images)))
    if phases.run("packages", build.host_packages):
        image_build.start()
        built.append(phases.run("setup", setup))
        image_build.join()
    if not built or not all(built):
        print(phases.table(time.monotonic() - began))
        return 1

    def start() -> str:
        started.append(stack.up())
        return "started" if started[-1] else "reused a running stack"

    def lint() -> None:
        # Beside the unit tests: its output goes to a file, printed when it fails.
        log = OUT / "lint.log"
        with log.open("w") as out:
            code = subprocess.call(
                ["make", "--no-print-directory", "lint"], cwd=REPO, stdout=out, stderr=out
            )
        if code != 0:
            print(log.read_text(), flush=True)
            raise RuntimeError(f"exit {code}; {log}")

    def unit() -> str:
        # Beside the stack's tests from the parallel phase on, at the lowest priority: the
        # parallel phase left 18% of the CPU idle (its tests wait on Kafka, the API server
        # and their clocks), and the unit tests need about 160 CPU-s under coverage, which
        # would go on the serial phase's wall time. Output to a file: it would interleave.
        # A file to a worker, and the files that use a local SparkSession all on one
        # (tests/helpers/sharing.py LOCAL_SPARK): one JVM rather than one a worker.
        log = OUT / "unit.log"
        selected = ["tests/unit", f"-n={args.workers}", "--dist=loadfile"]
        pytest("unit", selected, extra, nice=19, log=log)
        return log.read_text().strip().splitlines()[-1].strip("= ")

    # The stack and lint need nothing of each other: both at once.
    beside = [
        threading.Thread(target=phases.run, args=("stack start", start)),
        threading.Thread(target=phases.run, args=("lint", lint)),
    ]
    for thread in beside:
        thread.start()
    for thread in beside:
        thread.join()
    units = threading.Thread(target=phases.run, args=("unit", unit))
    # The sessions below share the stack this run holds: none may start or stop it.
    shared = {"KAFKA_RETENTION_KEEP_STACK": "1", "KAFKA_RETENTION_SHARED_STACK": "1"}
    stack_tests = ["tests/integration", "tests/e2e"]

    def beside_serial() -> str:
        # The tests needing Kafka alone (tests/helpers/sharing.py KAFKA_ONLY), beside the
        # serial and paired phases: those restart the API server and the node, which
        # these never call, and wait on them and on their clocks, leaving about a third
        # of the CPU idle. Niced, so the timed tests there get the CPU first.
        log = OUT / "kafka-only.log"
        env = {**shared, "KAFKA_RETENTION_KAFKA_ONLY": "1"}
        # 3 sessions: twice the tests they had on 2 (KAFKA_ONLY's second half), within
        # the serial and paired phases' 260 s.
        selected = [*stack_tests, "-m", "kafka_only and not serial", "-n=3", "--dist=loadfile"]
        pytest("kafka-only", selected, extra, env, nice=19, log=log)
        return log.read_text().strip().splitlines()[-1].strip("= ")

    kafka_only = threading.Thread(target=phases.run, args=("kafka-only", beside_serial))
    isolated = threading.Thread(target=stack.isolated_kafka.stop, kwargs={"patience": 8})
    # Whether this run stops the stack it started (at the end, and the isolated cluster
    # once its users are done).
    stops_stack = bool(started and started[0] and not os.environ.get("KAFKA_RETENTION_KEEP_STACK"))

    if stack.running():
        units.start()
        phases.run(
            "parallel",
            lambda: pytest(
                "parallel",
                [
                    *stack_tests,
                    *("-m", "not serial and not kafka_only", f"-n={args.workers}"),
                    "--dist=loadfile",
                ],
                extra,
                shared,
            ),
        )
        kafka_only.start()
        # Only the parallel phase uses the isolated cluster (the group that freezes, kills
        # and plants orphans on it): stopped now, unless the stack is kept, its three idle
        # brokers' raft fetches and heartbeats (about 0.05 of a core) leave the CPU to
        # the phases below.
        if stops_stack:
            isolated.start()
        phases.run(
            "serial",
            lambda: pytest("serial", [*stack_tests, "-m", "serial and not paired"], extra, shared),
        )
        # The soak and the timed fleet's two tests mostly wait on their clocks: each on a
        # worker of its own (pytest-xdist's load hands 3 tests to 3 workers one each).
        phases.run(
            "paired",
            lambda: pytest(
                "paired",
                [*stack_tests, "-m", "paired", "-n=3", "--dist=load"],
                extra,
                shared,
            ),
        )
    if units.ident is None:
        units.start()  # no stack: nothing else to wait for
    units.join()
    if kafka_only.ident is not None:
        kafka_only.join()
    if isolated.ident is not None:
        isolated.join()
    if stops_stack:
        phases.run("stack stop", stop)
    phases.run("coverage", coverage_report)

    total = time.monotonic() - began
    print(f"\nThe {SLOWEST} slowest tests:\n{slowest()}\n")
    table = phases.table(total)
    (OUT / "phases.txt").write_text(table + "\n")
    print(table)
    return 0 if phases.ok else 1


if __name__ == "__main__":
    sys.exit(main())
