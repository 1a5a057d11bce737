"""Every test has a timeout: a hang fails the suite, naming the test.

pytest.ini sets pytest-timeout's default `timeout` (signal method: the test
fails, its fixtures tear down); tests/conftest.py adds a hard stop for a test
blocked where SIGALRM cannot reach it. Both must stop the TFF workers the
timed-out test started. Checked on a tiny hanging test file run by pytest in a
subprocess with the project's pytest.ini and conftest.
"""

import configparser
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import REPO

HANGS = textwrap.dedent("""
    import os
    import signal
    import time

    import pytest

    from federated_vision.runtime import contexts

    STARTED = []


    @pytest.fixture
    def worker():
      with contexts.managed_execution_context() as pool:
        STARTED.extend(pool.pids)
        with open(os.environ["HANG_PIDS_FILE"], "a") as f:
          f.write("".join(f"{pid}\\n" for pid in pool.pids))
        yield


    def test_sleeps_forever():
      time.sleep(3600)


    @pytest.mark.timeout(2, func_only=True)
    def test_hangs_with_a_worker(worker):
      time.sleep(3600)


    def test_the_timed_out_tests_worker_is_gone():
      assert STARTED
      for pid in STARTED:  # Stopped (and reaped) by the fixture's teardown.
        assert not os.path.exists(f"/proc/{pid}"), pid
      print("WORKER_STOPPED_AT_TIMEOUT")


    @pytest.mark.timeout(1, func_only=True)
    def test_blocked_outside_python(worker):
      # As if stuck in TFF's C++ runtime: the SIGALRM is never handled.
      signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
      time.sleep(3600)
""")


def _alive(pid: int) -> bool:
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().split(")")[-1].split()[0] != "Z"
  except OSError:
    return False


def test_pytest_ini_sets_a_default_timeout(pytestconfig):
  ini = configparser.ConfigParser()
  ini.read(os.path.join(REPO, "pytest.ini"))
  assert int(ini["pytest"]["timeout"]) == 600
  assert ini["pytest"]["timeout_method"] == "signal"
  assert "pytest-timeout" in ini["pytest"]["required_plugins"]
  assert pytestconfig.pluginmanager.hasplugin("timeout")
  with open(os.path.join(REPO, "requirements.lock")) as f:
    assert "pytest-timeout==2.4.0\n" in f.read()


def test_reference_run_users_get_the_slow_timeout(request):
  # Collected items get their marker from conftest; this test does not use
  # the reference run, so its timeout is the default (no marker).
  assert request.node.get_closest_marker("timeout") is None
  items = [i for i in request.session.items
           if "reference_run" in getattr(i, "fixturenames", ())]
  for item in items:
    assert item.get_closest_marker("timeout").args[0] >= 1800


def _start_hanging_tests(tmp_path, *args):
  """pytest on HANGS with the project's pytest.ini, conftest and --timeout=2,
  started in the background; `_finish` waits for it."""
  (tmp_path / "test_hangs.py").write_text(HANGS)
  pids_file = tmp_path / "pids.txt"
  pids_file.write_text("")
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3",
             HANG_PIDS_FILE=str(pids_file), COLUMNS="200")
  proc = subprocess.Popen(
      [sys.executable, "-m", "pytest", "-c", os.path.join(REPO, "pytest.ini"),
       "--rootdir", str(tmp_path), "-p", "tests.conftest", "--timeout=2",
       "-q", str(tmp_path / "test_hangs.py"), *args],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
      cwd=str(tmp_path), env=env, stdin=subprocess.DEVNULL)
  return proc, pids_file


def _finish(started):
  """(exit code, output, pids of the workers the tests started) of a
  `_start_hanging_tests` session."""
  proc, pids_file = started
  try:
    out, err = proc.communicate(timeout=240)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
  pids = [int(line) for line in pids_file.read_text().split()]
  return proc.returncode, out + err, pids


@pytest.fixture(scope="module")
def hanging_sessions(tmp_path_factory):
  """Both sessions below, started at once: each mostly waits out its
  timeouts, so they overlap (ours: test-suite time, issue 29)."""
  started = {
      "not blocked": _start_hanging_tests(tmp_path_factory.mktemp("python"),
                                          "-k", "not blocked"),
      "blocked": _start_hanging_tests(tmp_path_factory.mktemp("outside"),
                                      "-k", "blocked")}
  yield started
  for proc, _ in started.values():
    if proc.poll() is None:
      proc.kill()
      proc.wait()


def _assert_all_stopped(pids):
  deadline = time.time() + 10
  while any(_alive(pid) for pid in pids) and time.time() < deadline:
    time.sleep(0.2)
  assert not [pid for pid in pids if _alive(pid)]


@pytest.mark.timeout(300)
def test_a_hang_fails_naming_the_test_and_its_workers_stop(hanging_sessions):
  code, out, pids = _finish(hanging_sessions["not blocked"])
  # Each hanging test fails by name after 2 s; the session goes on.
  assert code == 1, out[-3000:]
  assert "FAILED test_hangs.py::test_sleeps_forever - Failed: Timeout (>2.0s)" \
      in out, out[-3000:]
  assert ("FAILED test_hangs.py::test_hangs_with_a_worker - Failed: Timeout "
          "(>2.0s)") in out, out[-3000:]
  # The next test saw the timed-out test's worker already gone.
  assert "2 failed, 1 passed, 1 deselected" in out, out[-3000:]
  assert len(pids) == 1
  _assert_all_stopped(pids)


@pytest.mark.timeout(300)
def test_a_hang_outside_python_exits_naming_the_test_and_kills_workers(
    hanging_sessions):
  code, out, pids = _finish(hanging_sessions["blocked"])
  # Named, exit 1, after the 1 s timeout + 5.1 s grace, not after an hour.
  assert code == 1, out[-3000:]
  assert ("TIMEOUT: test_hangs.py::test_blocked_outside_python still running "
          "5.1 s after its 1 s timeout (blocked outside Python); killing its "
          "TFF workers and exiting") in out, out[-3000:]
  assert len(pids) == 1
  _assert_all_stopped(pids)
