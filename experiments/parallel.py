"""`--parallel_runs=N` of `sweep_main` and `reproduce`.

With N > 1 the points (sweep) or runs (preset) still to run are shared out
among N child processes (`python -m experiments.run_point`), each running
one point after another on the point's pickled `ExperimentConfig` -- the
very config the sequential path hands to `runner.run`, so every run's
results are those of N = 1. A child is reused for the next point as the
sequential path's one process is (imports and TensorFlow's start-up paid
once per child); after a failed point it exits and a fresh child takes the
next. Each point starts its own TFF worker(s) (`--local_workers`), holds its run
directory's `RunLock` (a directory locked by another process fails that
point, with exit 2 as in `train_main`) and writes its output to a log file;
the parent prints one line per point as it starts and as it ends (with its
status and, for a failure, the last lines of its stderr) and the others go
on. N = 1 is the sequential path, unchanged.

Exit status of the whole invocation (`exit_status`): the worst of its
points', in the order 2 (configuration error, directory in use) > 1 (any
other failure, e.g. a lost worker, an unwritable file, a crash) > 3 (a run
diverged: its results are written) > 0. SIGINT / SIGTERM / SIGHUP to the
parent stop every child (SIGTERM; each child then stops its workers, as
`runtime.signals.install_signal_handlers` does for `train_main`), SIGKILL after
`STOP_TIMEOUT_SEC`; a child whose parent dies gets SIGTERM from the kernel.

Memory: N is capped so that N x (estimated peak RSS of one run) fits in
MemAvailable (/proc/meminfo); see `PYTHON_PEAK_RSS_BYTES`.

Not reused across points: worker processes and built TFF computations (as
in the sequential path: each point pays its autograph and worker start, a
few seconds); sharing a worker between concurrent processes would
serialize them, and a computation built in one process cannot be handed to
another.

Threads: the children (their Python TensorFlow and their workers) keep
TensorFlow's thread pools as N = 1 has them (one thread per core); nothing
is split among them. Splitting changes results: with
TF_NUM_INTRAOP_THREADS=1 (what K // N gives for N = 2 on K = 2 cores) a
10-round digits FedAvg run's train_loss differs from round 8 on
(1.68346190 vs 1.68346214) and a FedAvg E=5 run's test_loss from round 2
(Eigen/oneDNN split a reduction by the pool's thread count), where the
default gives bitwise the same metrics.csv run after run.
TF_NUM_INTEROP_THREADS=1 and --max_concurrent_computation_calls=1 leave
the metrics identical but gained nothing measurable (the first: no CPU
change under load; the second: on the whole digits_claims preset 0.81x
wall, CPU 1.01x), so neither is on by default; a user may give the flag
(docs/experiments.md, "--parallel_runs";
`benchmarks.bench_parallel_runs --env_n / --flags_n` measure them).
"""

import ctypes
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import (Callable, Dict, List, Mapping, NamedTuple, Optional,
                    Sequence, Tuple)

from federated_vision.errors import ConfigError
from federated_vision.runtime import signals as runtime_signals

FLAG_HELP = ("Run up to N points/runs at once in N child processes (each "
             "runs points one after another, with its own worker(s): "
             "--local_workers each); 1: one after another in this process. "
             "Capped so that N runs fit in MemAvailable.")
# Peak RSS of one run, measured (/proc/<pid>/status VmRSS every 0.3 s) on
# `reproduce --preset=digits_claims --only=digits_claims_alpha_1`: 0.96 GB,
# Python 0.78 GB + one local worker_binary 0.18 GB. Ours: rounded up for a
# small model; a bigger one (MobileNetV2-GN: worker 3.7 GB) needs
# more, so with big models the cap is a floor, not a guarantee.
PYTHON_PEAK_RSS_BYTES = 900 * 2**20
WORKER_PEAK_RSS_BYTES = 300 * 2**20
STOP_TIMEOUT_SEC = 15.0  # Ours: a child's workers stop within ~5 s.
POLL_SEC = 0.2
STDERR_LINES = 5  # Last stderr lines shown for a failed point.
# Exit status -> severity (higher wins); unknown codes are failures (1).
_SEVERITY = {0: 0, 3: 1, 1: 2, 2: 3}
# A child goes on to its next job after these statuses (done, diverged:
# the run ended normally); after any other it exits and a fresh one starts.
CONTINUE = (0, 3)
_PR_SET_PDEATHSIG = 1
CHILD_MODULE = "experiments.run_point"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

Printer = Callable[[str], None]

try:  # Loaded here, not between fork and exec.
  _LIBC = ctypes.CDLL(None, use_errno=True)
  _PRCTL = _LIBC.prctl
except (OSError, AttributeError):  # Not Linux: `_stop` still reaches them.
  _PRCTL = None


class Job(NamedTuple):
  """One point to run: its name, config and run directory."""
  name: str
  config: object  # federated_vision.experiment.config.ExperimentConfig
  output_dir: str


class Outcome(NamedTuple):
  """How a point's process ended."""
  name: str
  returncode: int  # The child's exit status (1 for a signal we did not send).
  seconds: float
  stderr_tail: Tuple[str, ...]


def exit_status(codes: Sequence[int]) -> int:
  """The invocation's exit status from its points': the worst of them,
  2 > 1 > 3 > 0 (see the module docstring); 0 for none."""
  worst = 0
  for code in codes:
    code = code if code in _SEVERITY else 1
    if _SEVERITY[code] > _SEVERITY[worst]:
      worst = code
  return worst


def describe(code: int) -> str:
  """'completed' / 'diverged' / 'failed' for an exit status."""
  return {0: "completed", 3: "diverged"}.get(code, "failed")


def mem_available(meminfo: str = "/proc/meminfo") -> Optional[int]:
  """MemAvailable in bytes, or None when unknown (not Linux)."""
  try:
    with open(meminfo) as f:
      for line in f:
        if line.startswith("MemAvailable:"):
          return int(line.split()[1]) * 1024
  except (OSError, ValueError, IndexError):
    return None
  return None


def run_bytes(local_workers: int) -> int:
  """Estimated peak RSS of one run with `local_workers` local workers."""
  return PYTHON_PEAK_RSS_BYTES + max(local_workers, 0) * WORKER_PEAK_RSS_BYTES


def capped(requested: int, jobs: int, per_run: int,
           available: Optional[int]) -> Tuple[int, Optional[str]]:
  """(processes to use, a message if memory capped `requested`).

  min(requested, jobs), further capped to max(1, available // per_run) when
  `available` is known.
  """
  n = max(1, min(requested, jobs))
  if available is None or n * per_run <= available:
    return n, None
  fit = max(1, available // per_run)
  return fit, (f"--parallel_runs={requested}: capped to {fit}: {n} runs x "
               f"~{per_run / 2**30:.2f} GB estimated peak RSS exceed "
               f"MemAvailable {available / 2**30:.2f} GB (/proc/meminfo)")


def check_distinct(jobs: Sequence[Job]) -> None:
  """ConfigError if two jobs would share a run directory."""
  seen: Dict[str, str] = {}
  for job in jobs:
    key = os.path.realpath(job.output_dir)
    if key in seen:
      raise ConfigError(f"points {seen[key]} and {job.name} write to the same "
                        f"directory {job.output_dir}; --parallel_runs cannot "
                        "run them at once")
    seen[key] = job.name


def _child_setup():
  """Before exec (in the forked child: no loading, no locks): SIGTERM when
  the parent dies; SIGINT default (a parent started in the background has it
  ignored, which exec would pass on), as `runtime.workers._child_setup`."""
  if _PRCTL is not None:
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    _LIBC.signal(signal.SIGINT, 0)  # SIG_DFL


def _tail(path: str, lines: int = STDERR_LINES) -> Tuple[str, ...]:
  try:
    with open(path, errors="replace") as f:
      text = [l.rstrip() for l in f if l.strip()]
  except OSError:
    return ()
  return tuple(text[-lines:])


def _stop(procs: Sequence[subprocess.Popen]) -> None:
  """SIGTERM to every live child, SIGKILL after `STOP_TIMEOUT_SEC`."""
  live = [p for p in procs if p.poll() is None]
  for p in live:
    p.send_signal(signal.SIGTERM)
  deadline = time.monotonic() + STOP_TIMEOUT_SEC
  for p in live:
    try:
      p.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      p.kill()
      p.wait()


class _Slot:
  """One long-lived `run_point` child and the job it is running, if any."""

  def __init__(self, proc: subprocess.Popen, status_fd: int):
    self.proc = proc
    self.status_fd = status_fd
    self.buffer = b""
    self.job: Optional[int] = None
    self.start = 0.0
    self.retiring = False  # Its last job's status ends it: no new job.

  def assign(self, i: int, config_path: str, out: str, err: str) -> bool:
    """Hands job `i` to the child; False if the child is gone."""
    try:
      self.proc.stdin.write(f"{config_path}\t{out}\t{err}\n".encode())
      self.proc.stdin.flush()
    except OSError:  # BrokenPipeError: it died while idle.
      self.retiring = True
      return False
    self.job, self.start = i, time.monotonic()
    return True

  def read_statuses(self) -> List[int]:
    """Statuses the child has written since the last call."""
    try:
      chunk = os.read(self.status_fd, 4096)
    except BlockingIOError:
      return []
    self.buffer += chunk
    *lines, self.buffer = self.buffer.split(b"\n")
    return [int(l) for l in lines if l.strip()]

  def close(self) -> None:
    try:
      self.proc.stdin.close()
    except OSError:  # Its stdin's reader is gone.
      pass
    os.close(self.status_fd)


def run_jobs(jobs: Sequence[Job], parallel_runs: int,
             extra_modules: Sequence[str] = (), echo: Printer = print,
             total: Optional[int] = None,
             index: Optional[Sequence[int]] = None) -> List[Outcome]:
  """Runs `jobs` in child processes, at most `parallel_runs` at once.

  Each child (`experiments.run_point`) runs one job after another, as the
  sequential path does in its one process, so imports and start-up are paid
  once per child; a child whose job ended with a status other than 0 or 3
  (or that died) is replaced by a fresh one for the next job.
  `index[i]` (1-based) and `total` number the progress lines (default: the
  job's position in `jobs`). Each job's stdout and stderr go to
  <log dir>/<name>.log / .err (a temporary directory, printed; kept when a
  point failed, removed otherwise). Returns one `Outcome` per job, in order.
  On any exception (SIGINT's KeyboardInterrupt, SIGTERM's SystemExit, ...)
  every child is stopped before it propagates.
  """
  check_distinct(jobs)
  if not jobs:
    return []
  total = total or len(jobs)
  index = list(index or range(1, len(jobs) + 1))
  n, message = capped(parallel_runs, len(jobs), max(
      run_bytes(j.config.execution.local_workers) for j in jobs),
                      mem_available())
  if message:
    echo(message)
  if threading.current_thread() is threading.main_thread():
    runtime_signals.install_signal_handlers()  # SIGTERM/SIGHUP -> SystemExit.
  logs = tempfile.mkdtemp(prefix="parallel_runs_")
  echo(f"running {len(jobs)} point(s), {n} at a time; logs: {logs}")
  pending = list(range(len(jobs)))
  slots: List[_Slot] = []
  outcomes: Dict[int, Outcome] = {}

  def finish(slot: _Slot, code: int) -> None:
    i, slot.job = slot.job, None
    slot.retiring = code not in CONTINUE
    code = code if code >= 0 else 1
    tail = () if code == 0 else (_tail(_path(logs, jobs[i], ".err"))
                                 or _tail(_slot_path(logs, slot, ".err")))
    outcomes[i] = Outcome(jobs[i].name, code, time.monotonic() - slot.start,
                          tail)
    echo(f"[{index[i]}/{total}] {jobs[i].name}: {describe(code)} (exit "
         f"{code}, {outcomes[i].seconds:.1f} s)"
         + "".join(f"\n    | {l}" for l in tail))

  try:
    while pending or any(s.job is not None for s in slots):
      for slot in [s for s in slots if s.job is None and
                   (s.retiring or s.proc.poll() is not None)]:
        if slot.proc.poll() is None:
          continue  # Exiting after a failed job: replaced once it is gone.
        slot.close()
        slots.remove(slot)
      while pending and len(slots) < n:
        slots.append(_start_slot(logs, len(slots), extra_modules))
      for slot in slots:
        if slot.job is None and not slot.retiring and pending:
          i = pending[0]
          if not slot.assign(i, _write_config(logs, jobs[i]),
                             _path(logs, jobs[i], ".log"),
                             _path(logs, jobs[i], ".err")):
            continue
          pending.pop(0)
          echo(f"[{index[i]}/{total}] {jobs[i].name}: started (pid "
               f"{slot.proc.pid}) -> {jobs[i].output_dir}")
      busy = [s for s in slots if s.job is not None]
      ready, _, _ = select.select([s.status_fd for s in busy], [], [],
                                  POLL_SEC)
      for slot in busy:
        if slot.status_fd in ready:
          for code in slot.read_statuses():
            finish(slot, code)
        if slot.job is not None and slot.proc.poll() is not None:
          for code in slot.read_statuses():  # Written just before it exited.
            finish(slot, code)
          if slot.job is not None:  # Died without a status (a signal, ...).
            finish(slot, slot.proc.returncode)
  finally:
    for slot in slots:
      slot.close()  # End of input: an idle child exits.
    _stop([s.proc for s in slots if s.job is not None])
    _wait_or_stop([s.proc for s in slots])
  if all(o.returncode == 0 for o in outcomes.values()):
    shutil.rmtree(logs, ignore_errors=True)
  else:
    echo(f"logs of the failed points: {logs}")
  return [outcomes[i] for i in range(len(jobs))]


def _path(logs: str, job: Job, suffix: str) -> str:
  return os.path.join(logs, job.name.replace(os.sep, "_") + suffix)


def _slot_path(logs: str, slot: _Slot, suffix: str) -> str:
  return os.path.join(logs, f"child-{slot.proc.pid}{suffix}")


def _write_config(logs: str, job: Job) -> str:
  config_path = _path(logs, job, ".config.pkl")
  with open(config_path, "wb") as f:
    pickle.dump(job.config, f)
  return config_path


def _wait_or_stop(procs: Sequence[subprocess.Popen]) -> None:
  """Waits for children told to exit; `_stop` those that do not in time."""
  deadline = time.monotonic() + STOP_TIMEOUT_SEC
  for p in procs:
    try:
      p.wait(max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
      _stop([p])


def child_env(base: Mapping[str, str]) -> Dict[str, str]:
  """A child's environment: `base` with TF_CPP_MIN_LOG_LEVEL defaulted to 3
  and this checkout first on PYTHONPATH (the child imports this checkout's
  `experiments`, whatever its cwd). Thread settings are passed on as they
  are, never split among the children: TF_NUM_INTRAOP_THREADS changes
  results (module docstring, "Threads")."""
  env = dict(base)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  env["PYTHONPATH"] = os.pathsep.join(
      [_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
  return env


def _start_slot(logs: str, number: int, extra_modules: Sequence[str]
                ) -> _Slot:
  """Starts a `python -m experiments.run_point` child reading jobs from its
  stdin and writing their statuses to a pipe; its own output (start-up
  noise, a crash before its first job) goes to <logs>/child-<pid>.log/.err."""
  read_fd, write_fd = os.pipe()
  os.set_blocking(read_fd, False)
  args = [sys.executable, "-m", CHILD_MODULE, f"--status_fd={write_fd}"]
  if extra_modules:
    args.append(f"--extra_modules={','.join(extra_modules)}")
  env = child_env(os.environ)
  out_path = os.path.join(logs, f"starting-{number}.log")
  with open(out_path, "w") as out, open(out_path[:-4] + ".err", "w") as err:
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out,
                            stderr=err, env=env, pass_fds=(write_fd,),
                            preexec_fn=_child_setup)
  os.close(write_fd)
  slot = _Slot(proc, read_fd)
  for suffix in (".log", ".err"):  # Named by pid from now on.
    os.replace(out_path[:-4] + suffix, _slot_path(logs, slot, suffix))
  return slot


def failure_lines(outcomes: Sequence[Outcome]) -> List[str]:
  """'name (exit c)' for every point that did not complete."""
  return [f"{o.name} ({describe(o.returncode)}, exit {o.returncode})"
          for o in outcomes if o.returncode != 0]


def failure_error(label: str, outcomes: Sequence[Outcome],
                  diverged_before: Sequence[str] = ()):
  """The `run_errors.RunError` (one line, `exit_status` of every point)
  that ends an invocation some of whose points failed or diverged, or None
  when all completed. `diverged_before`: points whose summary.json already
  said 'diverged' (skipped now, status 3)."""
  # Local: training_loop imports TFF (seconds): only when needed.
  from federated_vision.training import run_errors  # pylint: disable=g-import-not-at-top
  bad = failure_lines(outcomes) + [f"{n} (diverged earlier)"
                                   for n in diverged_before]
  if not bad:
    return None
  error = run_errors.RunError(
      f"{label}: {len(bad)} point(s) did not complete: {', '.join(bad)}")
  error.exit_code = exit_status([o.returncode for o in outcomes]
                                + [3] * len(diverged_before))
  return error
