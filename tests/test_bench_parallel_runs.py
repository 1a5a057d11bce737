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
