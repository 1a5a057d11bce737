"""Shared test setup: quiet TF, repo on sys.path, the TFF runtime, and a
process-hygiene check.

Importing the library changes no process-wide state, so the session installs
the managed TFF runtime itself (`federated_vision.runtime.install`: default
context over a worker we own, SIGTERM / SIGHUP handling) before the first
test that runs with TFF imported. No TFF worker_binary started during the
session may outlive it: the session fails if one does (CI would hang on its
open pipes).
"""

import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("MPLBACKEND", "Agg")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
  sys.path.insert(0, REPO)

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


def pytest_sessionfinish(session, exitstatus):
  del exitstatus
  import time  # pylint: disable=g-import-not-at-top
  from federated_vision.runtime import registry  # pylint: disable=g-import-not-at-top
  registry.stop_all_workers()
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


def run_module(module: str, *args: str, timeout: float = 300,
               cwd: str = REPO, env=None) -> subprocess.CompletedProcess:
  """Runs `python -m module args` from the repo; captures output."""
  full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
  full_env.update(env or {})
  return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd,
                        capture_output=True, text=True, timeout=timeout,
                        env=full_env, stdin=subprocess.DEVNULL, check=False)


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
  """The directory of an uninterrupted 6-round SMALL_RUN on one worker."""
  root = tmp_path_factory.mktemp("reference")
  proc = run_module(TRAIN_MAIN, f"--root_output_dir={root}",
                    "--experiment_name=a", "--total_rounds=6", *SMALL_RUN)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return root / "a"


@pytest.fixture
def repo_root():
  return REPO


@pytest.fixture
def parse():
  """Parses argv into the global absl FLAGS of experiments.flags_lib."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from experiments import flags_lib  # pylint: disable=g-import-not-at-top
  flags_lib.define_flags()
  f = flags.FLAGS

  def _parse(*args):
    f.unparse_flags()
    f(["prog", *args])
    return f
  yield _parse
  f.unparse_flags()
