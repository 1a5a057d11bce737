"""The benchmarks' worker flags (moved from the library to
`benchmarks/harness.py`) give exactly the `WorkerConfig` they name."""

import argparse

import pytest

from benchmarks import harness
from federated_vision.runtime.worker_config import WorkerConfig


def _parse(*argv):
  parser = argparse.ArgumentParser()
  harness.add_worker_config_arguments(parser)
  return harness.worker_config_from_arguments(parser.parse_args(list(argv)))


def test_defaults_are_the_library_defaults():
  assert _parse() == WorkerConfig()


def test_every_flag_reaches_the_config():
  assert _parse("--worker_intra_op_threads=1", "--worker_inter_op_threads=2",
                "--worker_onednn=off", "--worker_malloc_arena_max=0",
                "--worker_env=A=1", "--worker_env=B=x=y") == WorkerConfig(
                    intra_op_threads=1, inter_op_threads=2, onednn=False,
                    malloc_arena_max=0, env=(("A", "1"), ("B", "x=y")))
  assert _parse("--worker_onednn=on").onednn is True


@pytest.mark.parametrize("argv, message", [
    (["--worker_env=NOVALUE"], "--worker_env='NOVALUE': expected NAME=VALUE"),
    (["--worker_env==1"], "expected NAME=VALUE"),
    (["--worker_intra_op_threads=-1"], "intra_op_threads must be >= 0"),
])
def test_bad_values_are_one_clear_error(argv, message):
  with pytest.raises(ValueError, match=message):
    _parse(*argv)


def test_refused_argument_is_one_line_and_exit_2_without_tff_traceback():
  """A benchmark that imports TFF at the top refuses a bad argument with
  argparse's line and exit 2, and no `ServiceManager.__del__` traceback from
  TFF's import-time context at exit (`harness.run_main`)."""
  from conftest import run_module  # pylint: disable=g-import-not-at-top
  proc = run_module("benchmarks.bench_workers", "--bogus_flag", timeout=120)
  assert proc.returncode == 2
  assert "Traceback" not in proc.stderr, proc.stderr
  assert proc.stderr.strip().splitlines()[-1] == (
      "bench_workers.py: error: unrecognized arguments: --bogus_flag")
