"""TensorBoard HParams records of a finished sweep, read back with
tensorboard.backend.event_processing (acceptance 5 of issue 12)."""

import numpy as np

from federated_vision.reproduction import hparams
from federated_vision.reproduction import presets
from tests.fixtures.reproduction_helpers import finished_run


def test_sweep_hparams_are_readable_from_the_log_directory(tmp_path):
  p = presets.get_preset("digits_effective_lr")
  (study,) = p.studies
  root = str(tmp_path)
  names = study.runs[:3]
  accs = {}
  for i, name in enumerate(names):
    accs[name] = 0.5 + 0.1 * i
    entries = {"fedavgm": {"relative_accuracy": accs[name] / 0.8,
                           "acc_at_round": accs[name], "rounds": 20}}
    if i == 2:
      entries["fedavgm"].update(status="diverged", final_accuracy=None)
    finished_run(root, p.run(name), {"fedavgm": [(10, 0.4), (20, accs[name])]},
                 entries=entries)
  out = hparams.write_sweep(root, names + ("never_ran",))
  assert out["written"] == [f"{n}/fedavgm" for n in names]
  assert out["skipped"] == ["never_ran"]

  read = hparams.read_hparams(root)
  assert set(read) == {"."} | {f"{n}/fedavgm/tensorboard" for n in names}
  assert {"alpha", "client_learning_rate", "server_momentum", "method",
          "server_effective_learning_rate"} <= set(read["."]["experiment"])
  for i, name in enumerate(names):
    session = read[f"{name}/fedavgm/tensorboard"]
    flags = p.run(name).flags
    hp = session["hparams"]
    assert hp["alpha"] == flags["alpha"]
    assert hp["client_learning_rate"] == flags["client_learning_rate"]
    assert hp["server_momentum"] == flags["server_momentum"]
    assert hp["algorithm"] == "fedavgm" and hp["method"] == "fedavgm"
    assert hp["method_fedvc"] is False and hp["fedir"] is False
    assert hp["server_effective_learning_rate"] == 1.0 / (
        1.0 - flags["server_momentum"])
    metrics = session["metrics"]
    if i < 2:
      assert session["status"] == "success"
      assert metrics == {
          "final_accuracy": np.float32(accs[name]),
          "relative_accuracy": np.float32(accs[name] / 0.8),
          "acc_at_round": np.float32(accs[name])}
    else:  # Diverged: no final accuracy, session ended as a failure.
      assert session["status"] == "failure"
      assert "final_accuracy" not in metrics


def test_method_hparams_flattens_values():
  hp = hparams.method_hparams(
      {"algorithm": ["fedavg", "fedavgm"], "alpha": float("inf"),
       "model": None, "resolved": {"x": 1}, "server_learning_rate": 2.0,
       "server_momentum": 0.5, "fedvc": True}, "fedavg+fedvc")
  # (A variant another test module of this process registered, e.g.
  # tests/methods/test_method_list.py's halfbatch, has its method_<name> flag
  # too.)
  from federated_vision import methods  # pylint: disable=g-import-not-at-top
  hp = {k: v for k, v in hp.items() if not k.startswith("method_")
        or k[len("method_"):] not in methods.variant_names()
        or methods.get(k[len("method_"):]).module.startswith(
            "federated_vision.")}
  assert hp == {"algorithm": "fedavg,fedavgm", "alpha": "inf", "fedvc": True,
                "server_learning_rate": 2.0, "server_momentum": 0.5,
                "method": "fedavg+fedvc", "method_algorithm": "fedavg",
                "method_server_optimizer": "sgd", "method_fedir": False,
                "method_fedprox": False, "method_fedvc": True,
                "server_effective_learning_rate": 2.0}


def test_nesterov_methods_record_the_effective_learning_rate():
  """The Hsu presets' FedAvgM (fedavgm@nesterov) records eta_s / (1 - beta)
  as heavy-ball's does, and says which server optimizer it is."""
  for preset, run in (("hsu2020_appendix_a", "cifar10_elr_c10_e1_alpha_0.1_"
                       "lr0.03_m0.97"),
                      ("hsu2020_table3", "inat_user_120k_fedavgm_c10_fedvc_"
                       "fedir_off_on_r5000")):
    flags = dict(presets.get_preset(preset).run(run).flags,
                 server_learning_rate=0.5)
    method = flags["methods"][-1]
    hp = hparams.method_hparams(flags, method)
    assert (hp["method"], hp["method_algorithm"],
            hp["method_server_optimizer"]) == (method, "fedavgm", "nesterov")
    assert hp["server_effective_learning_rate"] == 0.5 / (
        1.0 - flags["server_momentum"])
    plain = hparams.method_hparams(flags, method.replace("@nesterov", ""))
    assert plain["method_server_optimizer"] == "sgdm"
    assert plain["server_effective_learning_rate"] == (
        hp["server_effective_learning_rate"])
