"""protocols.lifecycle: workers (benchmark pools, torch.distributed parties) end when the process that
started them is SIGTERM'd alone, instead of running on as orphans (die_with_parent); a process a failed
transport left with stranded threads exits with its own status (exit_status)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protocols.lifecycle import Terminated, interrupted_status, terminate_like_interrupt

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")

_HEAD = """
import os, sys, time
from pathlib import Path

def job(path, *_, **__):
    Path(path).write_text(str(os.getpid()))
    time.sleep(60)
"""
SCRIPTS = {
    "spawn pool": _HEAD + """
if __name__ == "__main__":
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from protocols.lifecycle import die_with_parent
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=die_with_parent) as pool:
        pool.submit(job, sys.argv[1]).result()
""",
    "fork pool": _HEAD + """
if __name__ == "__main__":
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from protocols.lifecycle import die_with_parent
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=die_with_parent) as pool:
        pool.submit(job, sys.argv[1]).result()
""",
    "psi blinding pool (forkserver)": _HEAD + """
if __name__ == "__main__":
    from protocols.psi.parallel import make_pool
    with make_pool(1) as pool:
        pool.submit(job, sys.argv[1]).result()
""",
    "torch.distributed party": _HEAD + """
def role(transport, path):
    job(path)

if __name__ == "__main__":
    from protocols.transport import run_parties
    run_parties({"a": role, "b": role}, kwargs={"a": {"path": sys.argv[1]}, "b": {"path": sys.argv[1] + ".b"}},
                backend="torch")
""",
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by init) counts as gone
    status = Path(f"/proc/{pid}/status")
    return not (status.is_file() and "\nState:\tZ" in status.read_text())


@pytest.mark.parametrize("kind", list(SCRIPTS))
def test_workers_end_when_the_process_that_started_them_is_killed(tmp_path, kind):
    # Arrange: a parent whose one worker is busy for a minute
    script, pid_file = tmp_path / "parent.py", tmp_path / "worker.pid"
    script.write_text(SCRIPTS[kind])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file)], env=env)
    deadline = time.monotonic() + 90
    while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    worker = int(pid_file.read_text())
    # Act: SIGTERM to the parent alone, as kill or timeout send it
    parent.terminate()
    parent.wait(timeout=30)
    # Assert: the worker does not run on as an orphan
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker)


@pytest.mark.parametrize("kind", ["spawn pool", "torch.distributed party"])
def test_workers_run_when_their_launcher_is_pid_1(tmp_path, kind):
    # Arrange: the launcher as a container's entry point, PID 1 of a new PID namespace
    import shutil

    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True) \
        if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("cannot start a PID namespace here (needs unshare and CAP_SYS_ADMIN)")
    script, pid_file = tmp_path / "parent.py", tmp_path / "worker.pid"
    script.write_text(SCRIPTS[kind].replace("time.sleep(60)", "pass"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # Act
    proc = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(script),
                           str(pid_file)], env=env, capture_output=True, text=True, timeout=180)
    # Assert: die_with_parent did not take the worker's parent of PID 1 for a dead launcher
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pid_file.read_text().isdigit()


def test_ctrl_c_stays_here_blocks_sigint_for_the_body_only(monkeypatch):
    import signal

    from protocols import lifecycle

    def blocked() -> bool:
        return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])

    # Act / Assert: blocked inside, as before outside, even when the body raises
    with pytest.raises(RuntimeError):
        with lifecycle.ctrl_c_stays_here():
            assert blocked()
            raise RuntimeError("body failed")
    assert not blocked()
    # where the platform has no pthread_sigmask the body still runs
    monkeypatch.delattr(signal, "pthread_sigmask")
    ran = []
    with lifecycle.ctrl_c_stays_here():
        ran.append(True)
    assert ran == [True]


def test_a_process_with_stranded_threads_exits_at_once_with_its_status_and_output_flushed():
    # Arrange: a process that prints without a newline, then is marked as a failed transport would mark it
    code = ("import sys\nfrom protocols.lifecycle import exit_status, mark_stranded\n"
            "print('last line', end='')\nassert exit_status(5) == 5\n"
            "mark_stranded()\nexit_status(7)\nprint('not reached')\n")
    # Act
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # Assert: unmarked, the status is returned; marked, the process ends with it, its output intact
    assert proc.returncode == 7 and proc.stdout == "last line", proc.stderr


def test_sigterm_raises_terminated_in_the_body_and_the_old_handler_is_back_after():
    # Arrange
    before = signal.getsignal(signal.SIGTERM)
    # Act: a SIGTERM to this process inside the body
    with pytest.raises(Terminated) as stop:
        with terminate_like_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode; never reached
    # Assert: Ctrl-C's clean-up paths catch it too, and it exits as a shell reports SIGTERM
    assert isinstance(stop.value, KeyboardInterrupt) and interrupted_status(stop.value) == 143
    assert interrupted_status(KeyboardInterrupt()) == 130
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_stranded_exit_runs_the_hard_exit_cleanups_that_atexit_would_have(tmp_path):
    # Arrange: a scratch folder (as SEAL's in /dev/shm) removed at exit; os._exit skips atexit
    scratch = tmp_path / "scratch"
    code = ("import shutil, sys\nfrom protocols.lifecycle import exit_status, mark_stranded, on_hard_exit\n"
            f"p = {str(scratch)!r}\nimport os; os.mkdir(p)\n"
            "on_hard_exit(lambda: 1 / 0)\n"  # a failing cleanup does not stop the others or the exit
            "on_hard_exit(lambda: shutil.rmtree(p))\nmark_stranded()\nexit_status(7)\n")
    # Act
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # Assert
    assert proc.returncode == 7 and not scratch.exists()
