"""--parallel_runs=N of sweep_main / reproduce (issue 18): `experiments.parallel`."""

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import REPO, metric_rows
from experiments import parallel
from federated_vision.errors import ConfigError

# A 3-point digits sweep (registered by an --extra_modules module in a real
# sweep_main process, by exec in a copy of the registry in this one): 2 tiny
# points (1 round: enough to compare metrics; a third process at once is
# still possible with 3 points) and one whose directory the test locks.
SWEEP_MODULE = textwrap.dedent("""
    from federated_vision.experiment import sweeps
    BASE = {"dataset": "digits", "algorithm": ["fedavg"], "num_clients": 6,
            "clients_per_round": 3, "client_batch_size": 20,
            "total_rounds": 1, "rounds_per_eval": 1,
            "rounds_per_checkpoint": 1, "centralized_epochs": 0, "seed": 3}
    POINTS = tuple(sweeps.Point(f"alpha_{n}", {"alpha": float(n)})
                   for n in ("0.1", "10"))
    sweeps.register_sweep(sweeps.Sweep(
        "digits_tiny", ("digits",), BASE,
        POINTS + (sweeps.Point("zz_locked", {"alpha": 0.5}),)))
""")
POINTS = ("alpha_0.1", "alpha_10")


def test_exit_status_is_the_worst_of_the_points():
  assert parallel.exit_status([]) == 0
  assert parallel.exit_status([0, 0]) == 0
  assert parallel.exit_status([0, 3]) == 3
  assert parallel.exit_status([3, 1, 0]) == 1
  assert parallel.exit_status([1, 2, 3]) == 2
  assert parallel.exit_status([0, 137]) == 1  # Unknown: a failure.
  assert [parallel.describe(c) for c in (0, 3, 1, 2)] == [
      "completed", "diverged", "failed", "failed"]


def test_memory_cap_arithmetic(tmp_path):
  gb = 2**30
  assert parallel.capped(2, 5, gb, 8 * gb) == (2, None)
  assert parallel.capped(4, 3, gb, 8 * gb) == (3, None)  # No more than jobs.
  assert parallel.capped(4, 10, gb, None) == (4, None)   # Unknown: as asked.
  n, message = parallel.capped(8, 10, 2 * gb, 5 * gb)
  assert n == 2
  assert message == ("--parallel_runs=8: capped to 2: 8 runs x ~2.00 GB "
                     "estimated peak RSS exceed MemAvailable 5.00 GB "
                     "(/proc/meminfo)")
  assert parallel.capped(3, 3, 2 * gb, gb)[0] == 1  # Never below 1.
  assert parallel.run_bytes(2) == (parallel.PYTHON_PEAK_RSS_BYTES
                                   + 2 * parallel.WORKER_PEAK_RSS_BYTES)
  meminfo = tmp_path / "meminfo"
  meminfo.write_text("MemTotal:  100 kB\nMemAvailable:   2048 kB\n")
  assert parallel.mem_available(str(meminfo)) == 2048 * 1024
  meminfo.write_text("MemTotal:  100 kB\n")
  assert parallel.mem_available(str(meminfo)) is None
  assert parallel.mem_available(str(tmp_path / "none")) is None


def test_children_keep_the_thread_settings_of_one_run():
  """No thread split among the children (it would change results: the
  module docstring's "Threads"): TF_NUM_* pass on as they are, absent ones
  stay absent; the log level defaults to 3, this checkout goes first on
  PYTHONPATH."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(parallel.__file__)))
  env = parallel.child_env({"PATH": "/bin", "PYTHONPATH": "/a::/b"})
  assert env == {"PATH": "/bin", "TF_CPP_MIN_LOG_LEVEL": "3",
                 "PYTHONPATH": os.pathsep.join([root, "/a", "/b"])}
  given = {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "4",
           "TF_CPP_MIN_LOG_LEVEL": "1"}
  env = parallel.child_env(given)
  assert {k: env[k] for k in given} == given
  assert env["PYTHONPATH"] == root


def test_two_points_in_one_directory_are_refused(tmp_path):
  jobs = [parallel.Job("a", None, str(tmp_path / "x")),
          parallel.Job("b", None, str(tmp_path / "y" / ".." / "x"))]
  with pytest.raises(ConfigError, match="points a and b write to the same "
                     "directory"):
    parallel.run_jobs(jobs, 2)


def _sweep(root, module_dir, *extra):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg",
             PYTHONPATH=os.pathsep.join([REPO, str(module_dir)]))
  return subprocess.Popen(
      [sys.executable, "-m", "experiments.sweep_main", "--sweep=digits_tiny",
       "--extra_modules=digits_tiny_sweep", f"--root_output_dir={root}",
       *extra], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _children(pid):
  """Live `experiments.run_point` processes whose parent is `pid`."""
  out = []
  for p in os.listdir("/proc"):
    try:
      with open(f"/proc/{p}/stat") as f:
        stat = f.read().split(")")[-1].split()
      with open(f"/proc/{p}/cmdline", "rb") as f:
        cmd = f.read()
    except (OSError, ValueError):
      continue
    if int(stat[1]) == pid and stat[0] != "Z" and b"run_point" in cmd:
      out.append(int(p))
  return out


@pytest.fixture
def module_dir(tmp_path):
  d = tmp_path / "modules"
  d.mkdir()
  (d / "digits_tiny_sweep.py").write_text(SWEEP_MODULE)
  return d


@contextlib.contextmanager
def _locked(directory):
  """Holds `directory`'s run lock (an `flock` on its lock file, as
  `run_lock.RunLock` takes it) through a file description of its own,
  outside RunLock's re-entrant table of this process: a run in this process
  (the sequential sweep) is refused as a run of another process (a parallel
  sweep's child) is."""
  from federated_vision.training import run_lock  # pylint: disable=g-import-not-at-top
  directory.mkdir(parents=True)
  with open(directory / run_lock.LOCK_FILE, "w") as f:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    f.write(f"pid {os.getpid()} (the test)\n")
    f.flush()
    yield


def _most_children(pid, until_done):
  """(`until_done()`, the most live `run_point` children of `pid` seen at
  once while it ran)."""
  seen = []
  sampling = threading.Event()

  def sample():
    while not sampling.is_set():
      seen.append(len(_children(pid)))
      time.sleep(0.05)
  sampler = threading.Thread(target=sample)
  sampler.start()
  try:
    result = until_done()
  finally:
    sampling.set()
    sampler.join()
  return result, max(seen)


@pytest.mark.timeout(600)
def test_parallel_sweep_equals_sequential_and_reports_a_failed_point(
    tmp_path, monkeypatch):
  """--parallel_runs=2: the same metrics as 1, at most 2 points at once (the
  child processes, observed in /proc), a point whose directory another
  process locks fails with its status while the others complete; exit 2.

  Both sweeps' sweep_main runs in this process (`in_process`; the sweep
  registered in a copy of the registry for the test, not by --extra_modules,
  which would register it process-wide); the points of --parallel_runs=2 run
  in its real `run_point` child processes, those of 1 in this process. A
  real sweep_main process: test_sigterm_stops_every_point_and_its_workers."""
  import in_process  # pylint: disable=g-import-not-at-top
  from federated_vision.experiment import sweeps  # pylint: disable=g-import-not-at-top
  from federated_vision.registry import Registry  # pylint: disable=g-import-not-at-top
  registry = Registry("sweep", "sweep")
  for name, sweep in sweeps.SWEEPS.items():
    registry.add(name, sweep)
  monkeypatch.setattr(sweeps, "SWEEPS", registry)
  exec(SWEEP_MODULE, {})  # pylint: disable=exec-used
  results = {}
  for n in (1, 2):
    root = tmp_path / f"n{n}"
    with _locked(root / "digits_tiny" / "zz_locked"):
      proc, most = _most_children(os.getpid(), lambda r=root, n=n: (
          in_process.run_as_binary(
              "experiments.sweep_main", "--sweep=digits_tiny",
              f"--root_output_dir={r}", f"--parallel_runs={n}")))
    results[n] = (root, proc.returncode, proc.stdout, proc.stderr, most)
  for n in (1, 2):
    root, code, out, err, most = results[n]
    assert code == 2, err[-2000:]
    exp = root / "digits_tiny"
    for name in POINTS:
      assert (exp / name / "summary.json").is_file(), (n, name, out)
    assert not (exp / "zz_locked" / "summary.json").exists()
  assert results[1][4] == 0  # Sequential: no child processes.
  assert results[2][4] == 2  # Two at once, never more.
  for name in POINTS:
    assert metric_rows(tmp_path / "n2" / "digits_tiny" / name / "fedavg" /
                       "metrics.csv") == metric_rows(
                           tmp_path / "n1" / "digits_tiny" / name / "fedavg" /
                           "metrics.csv")
  out, err = results[2][2], results[2][3]
  lines = out.splitlines()
  for i, name in enumerate(POINTS, 1):
    assert any(l.startswith(f"[{i}/3] {name}: started (pid ") for l in lines)
    assert any(l.startswith(f"[{i}/3] {name}: completed (exit 0, ")
               for l in lines)
  failed = [i for i, l in enumerate(lines)
            if l.startswith("[3/3] zz_locked: failed (exit 2, ")]
  assert len(failed) == 1
  shown = []  # Its last stderr lines (TF's start-up noise may precede).
  for l in lines[failed[0] + 1:]:
    if not l.startswith("    | "):
      break
    shown.append(l)
  assert 1 <= len(shown) <= parallel.STDERR_LINES
  assert shown[-1].startswith("    | run_point.py: error: ")
  assert "is in use by another run" in shown[-1]
  assert err.strip().splitlines()[-1] == (
      "sweep_main.py: error: sweep digits_tiny: 1 point(s) did not complete: "
      "zz_locked (failed, exit 2)")
  # Sequential: as today, the locked point stops the sweep with exit 2.
  assert "is in use by another run" in results[1][3].strip().splitlines()[-1]


@pytest.mark.timeout(120)
def test_sigterm_stops_every_point_and_its_workers(tmp_path, module_dir):
  proc = _sweep(tmp_path, module_dir, "--parallel_runs=2",
                "--only=alpha_*", "--total_rounds=200")
  pids, lines = [], []
  for line in proc.stdout:
    lines.append(line)
    if ": started (pid " in line:
      pids.append(int(line.split("(pid ")[1].split(")")[0]))
    if len(pids) == 2:
      break
  assert len(pids) == 2, "".join(lines) + proc.stderr.read()
  workers = []
  deadline = time.time() + 60
  while len(workers) < 2 and time.time() < deadline:  # Both points train.
    workers = [p for p in os.listdir("/proc") if p.isdigit()
               and _parent(p) in pids and b"worker_binary" in _cmd(p)]
    time.sleep(0.2)
  assert len(workers) == 2
  proc.send_signal(signal.SIGTERM)
  assert proc.wait(timeout=40) == 128 + signal.SIGTERM
  time.sleep(1)
  for pid in pids + [int(w) for w in workers]:
    assert not _alive(pid), pid


def _parent(pid):
  try:
    with open(f"/proc/{pid}/stat") as f:
      return int(f.read().split(")")[-1].split()[1])
  except (OSError, ValueError):
    return None


def _cmd(pid):
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
      return f.read()
  except OSError:
    return b""


def _alive(pid):
  try:
    with open(f"/proc/{pid}/stat") as f:
      return f.read().split(")")[-1].split()[0] != "Z"
  except OSError:
    return False


@pytest.mark.timeout(300)
def test_reproduce_parallel_runs_the_others_and_writes_no_report(tmp_path):
  """reproduce(parallel_runs=2) on two tiny digits runs, one locked by this
  process: the other runs to the end, the error is RunError exit 2 naming
  the locked run, no report is written; unlocked, the rerun skips the
  finished run, runs the other and writes the report."""
  import dataclasses  # pylint: disable=g-import-not-at-top
  from experiments import reproduce_lib  # pylint: disable=g-import-not-at-top
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  from federated_vision.training import run_lock  # pylint: disable=g-import-not-at-top
  from federated_vision.reproduction import presets  # pylint: disable=g-import-not-at-top
  full = presets.get_preset("digits_claims")
  # One method and one round per run: the test is about which runs run
  # (FedAvgM's momentum goes with FedAvgM: a run sets nothing it does not
  # read).
  runs = tuple(dataclasses.replace(r, flags=dict(
      {k: v for k, v in r.flags.items() if k != "server_momentum"},
      algorithm=("fedavg",), total_rounds=1, rounds_per_eval=1,
      rounds_per_checkpoint=1, num_clients=4, clients_per_round=2))
               for r in full.runs[:2])
  preset = dataclasses.replace(full, name="tiny_parallel", runs=runs,
                               tables=(), studies=(), comparisons=(),
                               figures=())
  locked = tmp_path / runs[1].name
  locked.mkdir()
  out = []
  with run_lock.RunLock(str(locked)):
    with pytest.raises(run_errors.RunError) as e:
      reproduce_lib.reproduce(preset, str(tmp_path), {}, echo=out.append,
                              parallel_runs=2)
  assert e.value.exit_code == 2
  assert str(e.value) == (f"preset tiny_parallel: 1 point(s) did not "
                          f"complete: {runs[1].name} (failed, exit 2)")
  assert (tmp_path / runs[0].name / "summary.json").is_file()
  assert not (tmp_path / "tiny_parallel.md").exists()
  assert any(l.startswith(f"[1/2] {runs[0].name}: completed (exit 0, ")
             for l in out)
  outcome = reproduce_lib.reproduce(preset, str(tmp_path), {},
                                    echo=out.append, parallel_runs=2)
  assert outcome == {runs[0].name: "finished", runs[1].name: "ran"}
  assert (tmp_path / "tiny_parallel.md").is_file()
