"""benchmarks.bench_parallel_runs' metric comparison (the timing is a benchmark)."""

import pytest

from benchmarks import bench_parallel_runs


def _write(path, rows):
  path.parent.mkdir(parents=True)
  path.write_text("round,train_loss,round_seconds\n" + "".join(
      f"{r},{loss},{sec}\n" for r, loss, sec in rows))


def test_metrics_compare_without_the_timing_column(tmp_path):
  _write(tmp_path / "a" / "run1" / "fedavg" / "metrics.csv",
         [(1, "2.5", "0.3"), (2, "2.1", "0.2")])
  _write(tmp_path / "b" / "run1" / "fedavg" / "metrics.csv",
         [(1, "2.5", "9.9"), (2, "2.1", "0.1")])
  _write(tmp_path / "a" / "run2" / "fedavg" / "metrics.csv", [(1, "2.5", "1")])
  _write(tmp_path / "b" / "run2" / "fedavg" / "metrics.csv", [(1, "2.6", "1")])
  _write(tmp_path / "a" / "run3" / "fedir" / "metrics.csv", [(1, "2.5", "1")])
  same, different = bench_parallel_runs.compare_metrics(
      str(tmp_path / "a"), str(tmp_path / "b"))
  assert same == 1
  assert different == ["run2/fedavg", "run3/fedir"]  # Differs; missing in b.


def test_a_failed_invocation_stops_the_benchmark(tmp_path):
  with pytest.raises(SystemExit) as e:
    bench_parallel_runs.run_preset("no_such_preset", 1, str(tmp_path))
  assert "exited 2" in str(e.value)


def test_utilization_and_floor_arithmetic():
  # Last session's quiet-machine pair: N=1 416 s / 546 CPU-s, N=2 313 s /
  # 549 CPU-s, 2 cores.
  busy_1, busy_n, floor = bench_parallel_runs.utilization(416.0, 546.0, 313.0,
                                                          549.0, 2)
  assert busy_1 == pytest.approx(546 / 416)
  assert busy_n == pytest.approx(549 / 313)
  assert floor == pytest.approx(549 / (2 * 416))
  assert round(floor, 2) == 0.66


def test_env_n_parsing():
  assert bench_parallel_runs.parse_env([]) == {}
  assert bench_parallel_runs.parse_env(
      ["TF_NUM_INTEROP_THREADS=1", "X=a=b", "EMPTY="]) == {
          "TF_NUM_INTEROP_THREADS": "1", "X": "a=b", "EMPTY": ""}
  for bad in ("NOEQUALS", "=1"):
    with pytest.raises(ValueError, match=f"--env_n={bad}: must be NAME=VALUE"):
      bench_parallel_runs.parse_env([bad])


@pytest.mark.parametrize("arg, line", [
    ("--env_n=oops", "--env_n=oops: must be NAME=VALUE"),
    ("--flags_n=max_concurrent_computation_calls=1",
     "--flags_n=max_concurrent_computation_calls=1: must be --flag=value"),
    ("--overlap=only_one",
     "--overlap=only_one: must be two run names, RUN_A,RUN_B"),
])
def test_a_bad_argument_exits_2_naming_it(arg, line, capsys):
  with pytest.raises(SystemExit) as e:
    bench_parallel_runs.main([arg])
  assert e.value.code == 2
  assert capsys.readouterr().err.strip() == f"bench_parallel_runs: {line}"


def test_flags_n_reach_the_invocation(tmp_path):
  """An extra flag is passed to reproduce: an unknown one fails it (exit 1
  from absl's flag parser, named in the message)."""
  with pytest.raises(SystemExit) as e:
    bench_parallel_runs.run_preset("digits_claims", 2, str(tmp_path),
                                   extra_flags=["--no_such_flag=1"])
  assert "--parallel_runs=2" in str(e.value)
  assert "no_such_flag" in str(e.value)


def test_cores_busy_from_proc_stat_text():
  # user nice system idle iowait irq softirq steal: the aggregate line.
  before = bench_parallel_runs.cpu_jiffies(
      "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
  after = bench_parallel_runs.cpu_jiffies("cpu  250 0 80 850 60 0 0 10 0 0\n")
  assert before == (1000, 850) and after == (1250, 910)
  # 250 jiffies, 60 of them idle: 190 / 250 of 2 cores.
  assert bench_parallel_runs.busy_cores(before, after, 2) == pytest.approx(
      2 * 190 / 250)
  assert bench_parallel_runs.busy_cores(after, after, 2) == 0.0
  with pytest.raises(ValueError, match="not a /proc/stat"):
    bench_parallel_runs.cpu_jiffies("intr 1 2 3\n")
