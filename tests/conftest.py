"""Shared test setup: quiet TF, the repo and tests/fixtures/ on sys.path, the
TFF runtime, and a process-hygiene check.

Importing the library changes no process-wide state, so the session installs
the managed TFF runtime itself (`federated_vision.runtime.install`: default
context over a worker we own, SIGTERM / SIGHUP handling) before the first
test that runs with TFF imported. No TFF worker_binary started during the
session may outlive it: the session fails if one does (CI would hang on its
open pipes).
"""

import functools
import os
import signal
import subprocess
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")
# As the binaries (experiments/train_main.py): gRPC's fork handlers can
# deadlock the fork of a later TFF worker in this process (grpc/grpc#37259).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
# The tests sit in folders named after the library's subpackages (plus
# experiments/ for the binaries, project/ for the repository as a whole);
# the helper modules they import by bare name (`import run_checks`,
# `--extra_modules=extra_algorithm`) in fixtures/, this module in tests/.
TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
# The PYTHONPATH of a test's child process that imports what the tests do:
# the library, this module and the fixtures.
TEST_PYTHONPATH = os.pathsep.join([REPO, TESTS, FIXTURES])
for _path in (FIXTURES, TESTS, REPO):
  if _path not in sys.path:
    sys.path.insert(0, _path)

import pytest  # pylint: disable=g-import-not-at-top

_WORKER_PATTERN = "tensorflow_federated/.*worker_binary"
# Inherited by every process this session starts, including TFF workers, so
# the leak check counts only our own (not those of a concurrent run).
_MARKER = "FEDERATED_VISION_TEST_SESSION"
os.environ[_MARKER] = f"{os.getpid()}-{os.urandom(4).hex()}"


def _ours(pid: str) -> bool:
  try:
    with open(f"/proc/{pid}/environ", "rb") as f:
      return f"{_MARKER}={os.environ[_MARKER]}".encode() in f.read().split(b"\0")
  except OSError:
    return False


def worker_pids() -> set:
  out = subprocess.run(["pgrep", "-f", _WORKER_PATTERN], capture_output=True,
                       text=True, check=False).stdout
  pids = set()
  for pid in out.split():
    try:
      with open(f"/proc/{pid}/stat") as f:
        if f.read().split(")")[-1].split()[0] != "Z" and _ours(pid):
          pids.add(int(pid))  # Alive (not a zombie) and started by us.
    except OSError:
      pass
  return pids


_BEFORE = set()


def pytest_sessionstart(session):
  del session
  _BEFORE.update(worker_pids())


def pytest_runtest_setup(item):
  """Installs the TFF runtime once a test module has imported TFF (sessions
  of light tests never import it)."""
  del item
  if "tensorflow_federated" in sys.modules:
    from federated_vision import runtime  # pylint: disable=g-import-not-at-top
    runtime.install()


# pytest-xdist (`make test` runs `-n`): each worker process checks its own
# TFF workers (its own marker, set at import above) and hands a leak to the
# controller, which fails the session (xdist ignores a worker's exit status).
_LEAKED_IN_WORKERS = []


def pytest_testnodedown(node, error):
  del error
  _LEAKED_IN_WORKERS.extend(getattr(node, "workeroutput", {}).get(
      "fv_leaked_workers", ()))


def pytest_sessionfinish(session, exitstatus):
  del exitstatus
  import time  # pylint: disable=g-import-not-at-top
  if _LEAKED_IN_WORKERS:
    print(f"\nERROR: TFF worker processes outlived the tests: "
          f"{sorted(_LEAKED_IN_WORKERS)}", file=sys.stderr)
    session.exitstatus = 1
  from federated_vision.runtime import live_workers  # pylint: disable=g-import-not-at-top
  live_workers.stop_all_workers()
  if "tensorflow_federated" in sys.modules:
    # TFF's import-time context (still the default when no test ran, e.g.
    # --collect-only) would print a traceback from its __del__ at exit.
    from federated_vision.runtime import contexts  # pylint: disable=g-import-not-at-top
    contexts.retire_tff_default_context()
  deadline = time.time() + 10
  left = worker_pids() - _BEFORE
  while left and time.time() < deadline:
    time.sleep(0.2)
    left = worker_pids() - _BEFORE
  if left:
    print(f"\nERROR: TFF worker processes outlived the tests: {sorted(left)}",
          file=sys.stderr)
    session.exitstatus = 1
    if hasattr(session.config, "workeroutput"):  # An xdist worker.
      session.config.workeroutput["fv_leaked_workers"] = sorted(left)


# pytest-timeout (pytest.ini: `timeout`, `timeout_method = signal`) fails a
# test that overruns by raising in its main thread, so its fixtures tear down
# and stop the TFF workers it started. A thread blocked outside Python (in
# TFF's C++ runtime, waiting on a worker) never sees that SIGALRM; this second
# timer then names the test, kills this session's workers and exits non-zero.
_HARD_TIMER = pytest.StashKey[threading.Timer]()


def _hard_timeout_grace(timeout: float) -> float:
  return 5.0 + timeout / 10.0


def _hard_timeout(item, timeout: float) -> None:
  grace = _hard_timeout_grace(timeout)
  capman = item.config.pluginmanager.getplugin("capturemanager")
  if capman is not None:  # Write to the real terminal, not the capture file.
    capman.suspend_global_capture(in_=True)
  terminal = item.config.get_terminal_writer()
  terminal.line(
      f"\nTIMEOUT: {item.nodeid} still running {grace:g} s after its "
      f"{timeout:g} s timeout (blocked outside Python); killing its TFF "
      "workers and exiting", red=True)
  terminal.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  for pid in worker_pids() - _BEFORE:
    try:
      os.kill(pid, signal.SIGKILL)
    except OSError:
      pass
  os._exit(1)  # pylint: disable=protected-access


def pytest_timeout_set_timer(item, settings):
  """Arms the hard stop beside pytest-timeout's own timer (which still runs:
  returning None lets the next implementation of this firstresult hook run)."""
  if settings.timeout and settings.timeout > 0:
    timer = threading.Timer(
        settings.timeout + _hard_timeout_grace(settings.timeout),
        _hard_timeout, (item, settings.timeout))
    timer.daemon = True
    item.stash[_HARD_TIMER] = timer
    timer.start()


def pytest_timeout_cancel_timer(item):
  timer = item.stash.get(_HARD_TIMER, None)
  if timer is not None:
    timer.cancel()
    del item.stash[_HARD_TIMER]


# Every test using the session's reference run may be the one whose setup
# trains it (a 6-round train_main run): it gets the slow tests' timeout.
REFERENCE_RUN_TIMEOUT = 1800


# `make test` shares whole files out to its xdist processes (--dist loadfile)
# in collection order: the longest files go first, so that no process is
# left with a long file at the end while the others are idle. xdist 3.8
# re-sorts the files by their number of tests unless told not to
# (`--no-loadscope-reorder`, in the Makefile): without it this order was
# ignored. Measured (seconds per file, setup + call + teardown, 3 processes
# on 2 cores, fresh clone of 67277e1); files not named keep their order
# after these. Named by basename (test file names are unique across the
# folders of tests/). A stale order costs time, never a result.
LONGEST_FILES_FIRST = (
    "test_extending", "test_docs_output", "test_client_groups",
    "test_parallel_runs", "test_mixing_train_main", "test_realworld_training",
    "test_reproduction_entry", "test_mixing", "test_workers_flags",
    "test_interrupts", "test_extra_components", "test_algorithms",
    "test_mixed_precision", "test_stateful", "test_dry_runs_and_refusals",
    "test_scaffold_runs", "test_partition_per_class", "test_readme",
    "test_run_faults", "test_library_recipes", "test_reproduction_seeds",
    "test_training_loop_integrity", "test_shakespeare_claims",
    "test_reproduction_presets", "test_realworld_loaders", "test_multi_worker",
    "test_train_main", "test_run_integrity", "test_startup", "test_fedvc",
    "test_sweeps", "test_extra_mixing_strategy", "test_fedir_label_counts",
    "test_server_optimizers", "test_timeouts")


def _file_rank(item) -> int:
  name = os.path.splitext(os.path.basename(str(item.fspath)))[0]
  try:
    return LONGEST_FILES_FIRST.index(name)
  except ValueError:
    return len(LONGEST_FILES_FIRST)


def pytest_collection_modifyitems(items):
  if os.environ.get("PYTEST_XDIST_WORKER"):
    items.sort(key=_file_rank)  # Stable: a file's tests keep their order.
  for item in items:
    if ("reference_run" in getattr(item, "fixturenames", ())
        and item.get_closest_marker("timeout") is None):
      item.add_marker(pytest.mark.timeout(REFERENCE_RUN_TIMEOUT))


def run_module(module: str, *args: str, timeout: float = 300,
               cwd: str = REPO, env=None) -> subprocess.CompletedProcess:
  """Runs `python -m module args` from the repo; captures output."""
  full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
  full_env.update(env or {})
  return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd,
                        capture_output=True, text=True, timeout=timeout,
                        env=full_env, stdin=subprocess.DEVNULL, check=False)


class StopBefore:
  """A sampler that raises KeyboardInterrupt before round `stop` (a Ctrl-C):
  a run killed mid-way, for the resume tests."""

  def __init__(self, inner, stop):
    self.inner, self.stop = inner, stop

  def round_keys(self, round_num):
    if round_num == self.stop:
      raise KeyboardInterrupt
    return self.inner.round_keys(round_num)


def metric_rows(path):
  """A metrics.csv's rows without the timing column (it varies per run)."""
  import csv  # pylint: disable=g-import-not-at-top
  with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
  for r in rows:
    r.pop("round_seconds")
  return rows


TRAIN_MAIN = "experiments.train_main"
# A small train_main run: digits, 6 clients, 3 per round, FedAvg.
SMALL_RUN = ["--algorithm=fedavg", "--num_clients=6", "--clients_per_round=3",
             "--client_batch_size=20", "--rounds_per_eval=2",
             "--rounds_per_checkpoint=1", "--centralized_epochs=1", "--seed=3"]


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
  """The directory of an uninterrupted 6-round SMALL_RUN on one worker.

  Trained once per `make test`: under pytest-xdist the worker processes share
  one run (the first to take the lock trains it; `done` marks it complete).
  Tests only read it.
  """
  import fcntl  # pylint: disable=g-import-not-at-top
  shared = tmp_path_factory.getbasetemp()
  if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is per worker.
    shared = shared.parent
  root = shared / "reference_run"
  root.mkdir(exist_ok=True)
  with open(root / "lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not (root / "done").exists():
      proc = run_module(TRAIN_MAIN, f"--root_output_dir={root}",
                        "--experiment_name=a", "--total_rounds=6", *SMALL_RUN)
      assert proc.returncode == 0, proc.stderr[-3000:]
      (root / "done").write_text("ok")
  return root / "a"


@pytest.fixture
def repo_root():
  return REPO


@pytest.fixture
def parse():
  """Parses argv into the global absl FLAGS of experiments.flags_lib, as a
  binary's parser does (`cli.parse_flags`): --extra_modules imported first,
  then the flags of what they declared defined."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from experiments import cli  # pylint: disable=g-import-not-at-top
  from experiments import flags_lib  # pylint: disable=g-import-not-at-top
  flags_lib.define_flags()
  f = flags.FLAGS

  def _parse(*args):
    f.unparse_flags()
    cli.import_extra_modules(cli.extra_modules_in(["prog", *args]))
    flags_lib.define_flags()
    f(["prog", *args])
    return f
  yield _parse
  f.unparse_flags()


@pytest.fixture(scope="session")
def train_in_process():
  """`train(*flags)`: train_main in this process (`in_process.run`), a
  `subprocess.CompletedProcess` as `run_module(TRAIN_MAIN, *flags)` gives.

  For tests that check a run's results, not its process (exit status as the
  shell sees it, signals, a fresh interpreter): no `import tensorflow` per
  run, and TensorFlow's autograph cache is shared between runs (a small
  digits run: ~3.5 CPU-s instead of ~11).
  """
  import in_process  # pylint: disable=g-import-not-at-top
  return functools.partial(in_process.run, TRAIN_MAIN)
