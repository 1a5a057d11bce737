"""What every experiment binary shares: quiet TF, one-line errors, --extra_modules.

A binary defines its flags at import, then `app.run(lambda argv:
cli.main(argv, body))`: `body()` runs with line-buffered stdout and quiet TF
logging; a `ConfigError` (or `ValueError` from configuration) becomes ONE
line `<binary>: error: <message>` and exit status 2; a
`run_errors.RunError` one such line and its `exit_code` (2: directory in
use, 3: divergence, 1: checkpoint or write failure); an
`runtime.worker_errors.WorkerError` (a TFF worker did not start, or was lost: then
saying how to resume) and an `OSError` with a file name one line, status 1;
Ctrl-C prints how to resume and exits 130; SIGTERM / SIGHUP print the same
line and exit 143 / 129; a closed stdout (`| head -1`) ends it quietly with
status 141, a write error on stdout is one line, status 1
(`experiments.stdout`). The SIGTERM / SIGHUP handlers are installed when
`python -m experiments.<binary>` starts (`experiments.interrupted`), else
when the binary starts parsing its command line (`parse_flags`): before
TensorFlow's import and before anything is written, so a signal during
start-up is that line and status too. Unless told otherwise
(`tff_runtime=False`), `main` first installs the managed TFF runtime
(`federated_vision.runtime.install`: the default TFF context over a worker
we own, SIGTERM / SIGHUP handling); importing the library never does.
Binaries that run TensorFlow parse their flags with `parse_then_import_tf`
(TensorFlow imported only once the command line is accepted).
"""

import contextlib
import importlib
import importlib.util
import os
import sys
from typing import Callable, Iterator, NoReturn, Sequence

from absl import flags
from absl import logging

from experiments import help_lib
from experiments import interrupted as interrupted_lib
from experiments import stdout as stdout_lib
from federated_vision import runtime
from federated_vision.runtime import signals
from federated_vision.errors import ConfigError, one_line
from federated_vision.training import run_errors


def define_flags() -> None:
  """--extra_modules (idempotent)."""
  if "extra_modules" in flags.FLAGS:
    return
  flags.DEFINE_list("extra_modules", [], "Python modules to import before "
                    "the config is built, by name (mypkg.tasks) or file path "
                    "(./my_feddyn.py): they may register "
                    "tasks (federated_vision.tasks.register_task), models "
                    "(tasks.models.register_model), method components "
                    "(federated_vision.methods.register: algorithms, "
                    "variants, server optimizers, mixing strategies), "
                    "presets (reproduction.presets.register_preset) and "
                    "sweeps (experiment.sweeps.register_sweep); "
                    "docs/extending.md.")


def define_dry_run(help_text: str) -> None:
  """--dry_run with this binary's `help_text`: one flag shared by the
  binaries that plan (train_main, sweep_main, reproduce), so that a process
  importing several of them (the tests' in-process runs) defines it once."""
  if "dry_run" not in flags.FLAGS:
    flags.DEFINE_bool("dry_run", False, help_text)
  flags.FLAGS["dry_run"].help = help_text


# Called after --extra_modules were imported, before the flags are parsed
# (a binary's help text naming what they registered).
AFTER_EXTRA_MODULES = []
# Printed on Ctrl-C, SIGTERM and SIGHUP (`main`'s default).
INTERRUPTED = interrupted_lib.LINE


def fail(message: str, status: int = 2) -> NoReturn:
  """Prints `<binary>: error: <message>` to stderr and exits with `status`."""
  print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
  sys.exit(status)


@contextlib.contextmanager
def _start_up() -> Iterator[None]:
  """A binary's start-up (its flags, its checks, TensorFlow's import): from
  here on SIGTERM / SIGHUP are handled (`signals.install_signal_handlers`),
  and a signal or Ctrl-C is the one line `INTERRUPTED` and 128 + signal, a
  closed stdout (e.g. `--help | head -1`) a quiet exit (`stdout.guarded`)."""
  signals.install_signal_handlers()
  try:
    with stdout_lib.guarded():
      yield
  except KeyboardInterrupt:
    interrupted_lib.say()
    sys.exit(130)
  except SystemExit as e:
    signum = _terminating_signal()
    if signum is not None and e.code == 128 + signum:
      interrupted_lib.say()
    raise


def parse_flags(argv: Sequence[str]):
  """`app.run(main, flags_parser=cli.parse_flags)`: a bad flag value (e.g.
  `--seed=-1`, out of its bounds) is one line and exit status 2, like every
  other configuration error (absl's default exits 1 with two lines).
  `--help` prints the flags grouped by config section (`help_lib`), exit 0.

  --extra_modules are imported first (found in `argv` before parsing), so
  the options their tasks and variants declare (`config_fields`) are flags
  (`flags_lib`) that parse and show in --help."""
  with _start_up():
    return _parse_flags(argv)


def _parse_flags(argv: Sequence[str]):
  if "extra_modules" in flags.FLAGS:
    try:
      import_extra_modules(extra_modules_in(argv))
      if "dataset" in flags.FLAGS:  # The binary defines the config flags
        # (local: a binary without them, report_main, imports no config).
        from experiments import flags_lib  # pylint: disable=g-import-not-at-top
        flags_lib.define_flags()
      for hook in AFTER_EXTRA_MODULES:  # e.g. reproduce's --preset help.
        hook()
    except ValueError as e:  # ConfigError too.
      fail(one_line(e))
  if help_lib.wants_help(argv):
    help_lib.print_help_and_exit(flags.FLAGS)
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    fail(f"{one_line(e)} (--help lists the flags)")


def extra_modules_in(argv: Sequence[str]) -> list:
  """The modules of --extra_modules=a,b (or --extra_modules a,b) in `argv`
  (the last one given, as absl parses it)."""
  names = []
  for i, arg in enumerate(argv[1:], 1):
    name, eq, value = arg.lstrip("-").partition("=")
    if not arg.startswith("-") or name != "extra_modules":
      continue
    if not eq:
      value = argv[i + 1] if i + 1 < len(argv) else ""
    names = [n.strip() for n in value.split(",") if n.strip()]
  return names


def parse_then_import_tf(argv: Sequence[str],
                         check: Callable[[], None] = lambda: None,
                         needs_tf: Callable[[], bool] = lambda: True):
  """The flags parser of a binary that runs TensorFlow: `parse_flags`, then
  positional arguments and `check()` (a `ConfigError` is one line, exit 2),
  then TensorFlow's import (seconds of CPU) unless `needs_tf()` says the
  command never runs it (e.g. a --dry_run, then with `main(...,
  tff_runtime=False)`).

  A refused flag, a bad config or --help thus exits before TensorFlow is
  imported (ours: start-up). TensorFlow is imported here, not at
  the binary's import: imported for the first time inside absl's `main()`,
  Keras cannot build Sequential models ("Output tensors of a Sequential
  model must be the output of a TensorFlow Layer"); imported in the flags
  parser, it can.
  """
  with _start_up():
    rest = _parse_flags(argv)
    if len(rest) > 1:
      fail(f"unexpected arguments {rest[1:]}; all options are --flags")
    try:
      check()
    except ConfigError as e:
      fail(str(e))
    except run_errors.RunError as e:  # E.g. a damaged experiment.json.
      fail(one_line(e), e.exit_code)
    if needs_tf():  # Heavy: only once the command line is accepted (above).
      # gRPC's fork handlers can deadlock the fork of a later TFF worker in
      # a process that already used gRPC (grpc/grpc#37259); we always exec
      # right after fork, the case gRPC documents for turning them off.
      os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
      import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
  return rest


def _worker_error_types():
  """(`WorkerError`, `WorkerLostError`) if the runtime's errors were imported."""
  errors = sys.modules.get("federated_vision.runtime.worker_errors")
  if errors is None:
    return (), ()
  return errors.WorkerError, errors.WorkerLostError


def _terminating_signal():
  """The signal the runtime's SIGTERM/SIGHUP handler is stopping us for."""
  signals = sys.modules.get("federated_vision.runtime.signals")
  return None if signals is None else signals.TERMINATING_SIGNAL


def import_extra_modules(names: Sequence[str]) -> None:
  """Imports --extra_modules: each a module name (`mypkg.tasks`, found on
  the Python path) or a `.py` file path (`./my_feddyn.py`, imported as
  module `my_feddyn`, its directory added to the end of `sys.path` so it
  can import its neighbours). A module already imported is not run again.

  Raises:
    ConfigError: naming the flag when one cannot be found or imported.
  """
  for name in names:
    try:
      if _is_path(name):
        _import_file(name)
      else:
        importlib.import_module(name)
    except Exception as e:  # pylint: disable=broad-except
      raise ConfigError(f"--extra_modules={','.join(names)}: cannot "
                        f"import {name} ({type(e).__name__}: {one_line(e)})",
                        "extra_modules") from None


def _is_path(name: str) -> bool:
  """A file path rather than a dotted module name."""
  return name.endswith(".py") or os.sep in name


def _import_file(path: str) -> None:
  """Runs the module file `path` as module `<its stem>` (once per file)."""
  path = os.path.abspath(path)
  if not os.path.isfile(path):
    raise FileNotFoundError(f"no such file {path}")
  stem = os.path.splitext(os.path.basename(path))[0]
  loaded = sys.modules.get(stem)
  if loaded is not None:
    if os.path.abspath(getattr(loaded, "__file__", "") or "") == path:
      return
    raise ImportError(f"a module named {stem} is already imported from "
                      f"{getattr(loaded, '__file__', None) or 'elsewhere'}")
  spec = importlib.util.spec_from_file_location(stem, path)
  if spec is None or spec.loader is None:
    raise ImportError(f"{path} is not a Python module")
  module = importlib.util.module_from_spec(spec)
  folder = os.path.dirname(path)
  if folder not in sys.path:
    sys.path.append(folder)
  sys.modules[stem] = module
  try:
    spec.loader.exec_module(module)
  except BaseException:
    del sys.modules[stem]
    raise


def main(argv: Sequence[str], body: Callable[[], None],
         interrupted: str = INTERRUPTED,
         tff_runtime: bool = True) -> None:
  """Runs `body()` as the binary's main (see the module docstring).

  Args:
    argv: the binary's positional arguments (none are accepted).
    body: the binary's work.
    interrupted: printed on Ctrl-C, SIGTERM and SIGHUP.
    tff_runtime: install the managed TFF runtime first (False for binaries
      that never run TFF, e.g. report_main, which does not import TF).
  """
  sys.stdout.reconfigure(line_buffering=True)  # Progress reaches pipes/logs.
  if len(argv) > 1:
    fail(f"unexpected arguments {argv[1:]}; all options are --flags")
  logging.set_verbosity(logging.WARNING)  # TFF logs every checkpoint at INFO.
  if "tensorflow" in sys.modules:
    sys.modules["tensorflow"].get_logger().setLevel("ERROR")
  if tff_runtime:
    runtime.install()  # Imports TFF: only for binaries that run it.
  with stdout_lib.guarded():  # A closed stdout: quiet; a full one: a line.
    _run_body(body, interrupted)


def _run_body(body: Callable[[], None], interrupted: str) -> None:
  """`main`'s `body()`, its errors turned into one line and exit status."""
  try:
    body()
  except ConfigError as e:
    fail(str(e))
  except Exception as e:  # pylint: disable=broad-except
    if isinstance(e, run_errors.RunError):
      fail(one_line(e), e.exit_code)
    worker_error, worker_lost = _worker_error_types()
    if isinstance(e, worker_error):  # Workers stopped by SIGTERM / SIGHUP.
      signum = _terminating_signal()
      if signum is not None:
        interrupted_lib.say(interrupted)
        sys.exit(128 + signum)
    if isinstance(e, worker_lost):
      fail(f"{one_line(e)}; the run stopped: rerun the same command (with "
           "working --workers / --local_workers) to resume from its last "
           "checkpoint (written every --rounds_per_checkpoint rounds)", 1)
    if isinstance(e, worker_error):
      fail(one_line(e), 1)
    if isinstance(e, OSError) and e.filename:
      fail(f"{e.filename}: {e.strerror or one_line(e)}", 1)
    raise
  except KeyboardInterrupt:
    interrupted_lib.say(interrupted)
    sys.exit(130)
  except SystemExit as e:  # SIGTERM / SIGHUP (`runtime.signals`): as Ctrl-C.
    signum = _terminating_signal()
    if signum is not None and e.code == 128 + signum:
      interrupted_lib.say(interrupted)
    raise
