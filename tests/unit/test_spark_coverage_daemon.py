"""make test's Spark daemon (hack/spark-daemon): a reused Python worker that its daemon's
shutdown hangs up ends through os._exit, where coverage saves its lines, instead of
dying of SIGHUP with them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from devstack import build, paths

# A worker as pyspark.daemon runs it after the fork, whose task is interrupted by the
# hang-up the daemon sends its process group on shutdown. os._exit says when it is called,
# as coverage's own patch of it saves then.
_WORKER = """
import os, signal, socket, sys, time

if sys.argv[1] == "ours":
    import spark_coverage_daemon
import pyspark.daemon
import pyspark.worker

_exit = os._exit


def saving_exit(code):
    print("os._exit", code, flush=True)
    _exit(code)


def task(infile, outfile):
    os.kill(os.getpid(), signal.SIGHUP)
    time.sleep(30)


os._exit = saving_exit
pyspark.worker.main = task
ours, theirs = socket.socketpair()
pyspark.daemon.worker(ours, True)
print("the task returned", flush=True)
"""


def _worker(daemon: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(paths.SPARK_DAEMON_DIR)}
    return subprocess.run(
        [sys.executable, "-c", _WORKER, daemon],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_pysparks_own_worker_dies_of_a_hang_up_without_calling_os_exit() -> None:
    done = _worker("theirs")
    assert done.returncode == -signal.SIGHUP, done.stderr
    assert done.stdout == ""


def test_our_daemons_worker_ends_a_hang_up_through_os_exit() -> None:
    done = _worker("ours")
    assert (done.returncode, done.stdout) == (0, "os._exit 0\n"), done.stderr


def test_the_tests_spark_sessions_run_our_daemon_from_the_front_of_their_python_path() -> None:
    daemon = f"-Dspark.python.daemon.module={paths.SPARK_DAEMON_MODULE}"
    ours = str(paths.SPARK_DAEMON_DIR)
    assert build.spark_daemon("") == (daemon, ours)
    assert build.spark_daemon(f"/a{os.pathsep}/b") == (daemon, os.pathsep.join([ours, "/a", "/b"]))
    assert (paths.SPARK_DAEMON_DIR / f"{paths.SPARK_DAEMON_MODULE}.py").is_file()
