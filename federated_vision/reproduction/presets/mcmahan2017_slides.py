"""The slides' own MNIST 2NN runs (a talk on McMahan et al. 2017).

The slides (../shared/papers/mcmahan2017_fedavg_slides.txt, Idriss Tondji,
AMMI-Senegal, 2021) train McMahan's MNIST 2NN themselves: "Hyperparameters
- Learning Rate: 0.01 - Local Epochs: 5 - Local Batch Size: 10 - Client
Fraction: 0.1 - Optimizer: SGD" and report "MNIST 2NN with E=1. IID
Parition: (Test Accuracy 97.72%) Non-IID ParTition: (Test Accuracy 95.82%)
MNIST 2NN with E= 5. IID Parition: (Test Accuracy 97.97%) Non-IID Parition:
(Test Accuracy 95.31%)". The data and partitions are McMahan's (the slides
quote §3's IID and 2-shard partitions). The number of rounds is not on the
slides: ours.
"""

import dataclasses

from federated_vision.reproduction import published
from federated_vision.reproduction import spec
from federated_vision.reproduction.presets import _common as c
from federated_vision.reproduction.presets import mcmahan2017 as mcmahan

PAPER = "mcmahan2017_slides"
SLIDES_LR = 0.01
SLIDES_ROUNDS = 200
_HYPERPARAMETERS = ("Slides, Section Experiments, Hyperparameters: "
                    "\"Learning Rate: 0.01 Local Epochs: 5 Local Batch Size: "
                    "10 Client Fraction: 0.1 Optimizer: SGD\"")
_RESULTS = ("Slides, Section Results: \"MNIST 2NN with E=1. [...] MNIST "
            "2NN with E= 5.\"")
_SOURCES = {
    **c.COMMON_SOURCES, **mcmahan.MCMAHAN_SOURCES,
    "model": "Slides, Section Experiments, Model: \"A simple multilayer "
             "perceptron with 2 hidden layers with 200 units each using ReLU "
             "activations.\" (mnist_2nn)",
    "partition": "Slides, Section Experiments, Data Partitioning: "
                 "\"IID: data is shuffled, partitioned into 100 clients. Each "
                 "client receives 600 examples. Non-IID: Sort the data by "
                 "digit label, divide it into 200 shards. Each shard is of "
                 "size 300. Assign each of 100 clients 2 shards.\" (iid, "
                 "shards)",
    "algorithm": "Slides, Section Approach: \"Algorithm 1 FedAvg "
                 "(server-side)\" (fedavg)",
    "client_learning_rate": _HYPERPARAMETERS + " (0.01)",
    "client_fraction": _HYPERPARAMETERS + " (0.1)",
    "client_batch_size": _HYPERPARAMETERS + " (10)",
    "client_epochs": _RESULTS + " (E = 1 and E = 5; the hyper-parameter "
                     "slide lists 5)",
    "total_rounds": spec.OURS + "the slides print no round count; 200 "
                    "rounds (their learning-curve figure was lost)",
    "rounds_per_eval": spec.OURS + "every round (the final accuracy is the "
                       "last round's)",
    "target_accuracy": spec.OURS + "97% as McMahan's 2NN tables; the slides "
                       "report final accuracies, which the cells show",
}


def slides_run(partition: str, e: int) -> spec.Run:
  """McMahan's 2NN run at the slides' settings (C = 0.1, B = 10, eta =
  0.01, E = e) for SLIDES_ROUNDS rounds."""
  base = mcmahan.mcmahan_run("mnist_2nn", partition, 0.1, e, 10)
  flags = dict(base.flags, client_learning_rate=SLIDES_LR,
               total_rounds=SLIDES_ROUNDS)
  return dataclasses.replace(base, name=f"{base.name}_lr0.01_r{SLIDES_ROUNDS}",
                             flags=flags)


def slides() -> spec.Preset:
  runs, cells = [], []
  for row, e in zip(published.SLIDES_ROWS, (1, 5)):
    for column, partition in zip(published.SLIDES_COLUMNS, ("iid", "shards")):
      run = slides_run(partition, e)
      runs.append(run)
      cells.append(spec.CellSpec(row, column, run.name,
                                 spec.Metric(spec.FINAL_ACCURACY), "fedavg"))
  table = spec.TableSpec(
      (PAPER, "slides_2nn"), "The slides' runs: MNIST 2NN, η = 0.01, B = 10, "
      f"C = 0.1, final test accuracy after {SLIDES_ROUNDS} rounds (ours)",
      published.SLIDES_ROWS, published.SLIDES_COLUMNS, tuple(cells))
  return spec.Preset(
      "mcmahan2017_slides", PAPER,
      "The slides' own MNIST 2NN runs (learning rate 0.01, E = 1 and 5, "
      "B = 10, C = 0.1, IID and non-IID) beside their printed accuracies.",
      tuple(runs), (table,),
      notes=(f"The slides print no round count: ours run {SLIDES_ROUNDS} "
             "rounds and report the last evaluation.",),
      sources={k: v for k, v in _SOURCES.items()
               if any(k in run.flags for run in runs)})


PRESETS = (slides,)
