"""Planning: selection, required data flags and files checked before any run,
full flags per run, statuses of what is already done."""

import pytest

from federated_vision.reproduction import plan
from federated_vision.reproduction import presets
from tests.fixtures.reproduction_helpers import finished_run


def test_missing_data_flag_or_file_is_named_before_running(tmp_path):
  p = presets.get_preset("hsu2020_table5")
  with pytest.raises(plan.PlanError, match=r"run inat_geo_3k_fedavg_c10_fedvc_r50000 "
                     r"needs --split_csv \(data is never downloaded\)"):
    plan.plan(p, str(tmp_path), {})
  split = tmp_path / "split.csv"
  split.write_text("x\n")
  data = {"split_csv": str(split), "test_csv": str(tmp_path / "nope.csv"),
          "image_root": str(tmp_path)}
  with pytest.raises(plan.PlanError, match=r"--test_csv=.*nope.csv: no such file"):
    plan.plan(p, str(tmp_path), data)
  data["test_csv"] = str(split)
  with pytest.raises(plan.PlanError, match="needs --pretrained_weights"):
    plan.plan(p, str(tmp_path), data)
  # The scratch runs alone need no weights.
  planned = plan.plan(p, str(tmp_path), data, only=["*scratch*"])
  assert [r.run.name for r in planned] == [
      "inat_geo_3k_fedavg_c10_fedvc_scratch_r50000",
      "inat_geo_3k_fedavg_c100_fedvc_scratch_r20000",
      "inat_geo_3k_fedavgm_c10_fedvc_scratch_r50000",
      "inat_geo_3k_fedavgm_c100_fedvc_scratch_r20000", "central_inat_scratch"]
  weights = tmp_path / "w.h5"
  weights.write_text("w")
  data["pretrained_weights"] = str(weights)
  planned = plan.plan(p, str(tmp_path / "out"), data)
  by = {r.run.name: r for r in planned}
  scratch = by["inat_geo_3k_fedavg_c10_fedvc_scratch_r50000"].flags
  assert "pretrained_weights" not in scratch
  pre = by["inat_geo_3k_fedavg_c10_fedvc_r50000"].flags
  assert pre["pretrained_weights"] == str(weights)
  assert pre["experiment_name"] == "inat_geo_3k_fedavg_c10_fedvc_r50000"
  assert pre["root_output_dir"] == str(tmp_path / "out")
  assert pre["methods"] == ["fedavg+fedvc"] and pre["inat_split"] == "geo_3k"
  assert {r.status for r in planned} == {"missing"}


def test_landmarks_accepts_either_image_root_or_tar_shards(tmp_path):
  p = presets.get_preset("hsu2020_table4")
  f = tmp_path / "f"
  f.write_text("x")
  data = {"split_csv": str(f), "test_csv": str(f),
          "pretrained_weights": str(f), "tar_shards": str(tmp_path / "*.tar")}
  with pytest.raises(plan.PlanError, match=r"--tar_shards: .*\*.tar matches no "
                     "file"):
    plan.plan(p, str(tmp_path), data)
  (tmp_path / "images_000.tar").write_text("t")
  planned = plan.plan(p, str(tmp_path), data)
  assert len(planned) == 14 and all("image_root" not in r.flags
                                    for r in planned)


def test_only_and_statuses(tmp_path):
  p = presets.get_preset("digits_effective_lr")
  with pytest.raises(plan.PlanError, match="--only=nothing_like_this: matches "
                     "no run of preset digits_effective_lr"):
    plan.plan(p, str(tmp_path), {}, only=["nothing_like_this"])
  done = p.runs[0]
  finished_run(str(tmp_path), done, {"fedavgm": [(20, 0.8)]})
  planned = plan.plan(p, str(tmp_path), {}, only=["digits_elr_alpha_0.1_*"])
  assert len(planned) == 6
  assert [r.status for r in planned] == ["finished"] + ["missing"] * 5
