"""Runs a preset's averaging run: McMahan et al. 2017 Figure 1.

`run(values)` is the counterpart of `runner.run` for a `spec.AVERAGING`
run, which is not a train_main run: it trains the figure's two pairs of
parent models (independent and shared initialisation) and evaluates every
mixture theta w + (1 - theta) w' on the full training set
(`evaluation.model_averaging.figure1`). Its settings are the train_main
settings of the same meaning (`spec.AVERAGING_FLAGS`: the data set and
model, the seed, and each parent's local training: its sample of
--examples_per_client examples, SGD at --client_learning_rate with
minibatches of --client_batch_size for --client_epochs epochs), validated
as train_main validates them (`config.from_values`), plus the data-location
and output flags.

It writes <root_output_dir>/<experiment_name>/hparams.json (the settings
it read, as a train_main run records them, and the data source) and then
summary.json (sealed; no federated methods; the curves under
`model_averaging.SUMMARY_KEY`), each written whole; `reproduce` reads a run
with a summary.json as finished and draws the figure from it. A directory
holding anything else is refused before anything is written (one line,
exit 2). An interrupted run (no summary.json yet) is run again whole: it is
a few minutes of deterministic work, with nothing to resume.
"""

import os
from typing import Callable, Mapping

from federated_vision.errors import ConfigError
from federated_vision.experiment import config as config_lib
from federated_vision.experiment import run_record

# Figure 1's model and data: its footnote "We use the "2NN" multi-layer
# perceptron described in Section 3." on "the full MNIST training set".
DATASET, MODEL = "mnist", "mnist_2nn"
# What trains an averaging run, as `reproduce --dry_run` names it, and its
# cost (`reproduce --estimate` projects train_main runs only).
PROGRAM = ("McMahan 2017 Figure 1's model averaging, "
           "federated_vision/experiment/averaging_runner.py")
COST = "measured here: 22 CPU-seconds on 60,000 MNIST-sized images"


def settings(values: Mapping[str, object]) -> dict:
  """{flag: value} of the settings an averaging run reads, validated as
  train_main validates them.

  Raises:
    ConfigError: naming the flag (also a data set or model other than
      Figure 1's MNIST 2NN).
  """
  config = config_lib.from_values(values)
  flat = config_lib.flat(config)
  for flag, want in (("dataset", DATASET), ("model", MODEL)):
    if flat[flag] != want:
      raise ConfigError(f"--{flag}={flat[flag]}: an averaging run (McMahan "
                        f"2017 Figure 1) trains --{flag}={want}", flag)
  from federated_vision.reproduction import spec  # pylint: disable=g-import-not-at-top
  return {k: flat[k] for k in sorted(spec.AVERAGING_FLAGS)}


def run(values: Mapping[str, object],
        echo: Callable[[str], None] = print) -> str:
  """Trains and evaluates Figure 1 with `values` (the run's flags, its data
  flags, root_output_dir and experiment_name); returns its directory.

  Raises:
    ConfigError: a bad setting or data flag, data not where the flag
      says or damaged, or a directory holding files an averaging run does
      not write (naming it); nothing is written.
  """
  config = config_lib.from_values(values)
  read = settings(values)
  directory = config.output_dir
  if os.path.isdir(directory):
    foreign = run_record.not_run_files(directory)
    if foreign:
      raise ConfigError(f"{directory}: holds {foreign[0]}, which no run "
                        "writes: not an averaging run's directory (choose "
                        "another --experiment_name or --results_root)",
                        "experiment_name")
  from federated_vision.evaluation import model_averaging as ma  # pylint: disable=g-import-not-at-top
  from federated_vision.evaluation import reporting  # pylint: disable=g-import-not-at-top
  data = config.data
  archive = data.archive_path if data.data_source == "archive" else None
  flag = "archive_path" if archive else "data_dir"
  try:
    x, y, source = ma.load_mnist_training_set(
        None if archive else data.data_dir, archive)
  except (OSError, ValueError) as e:  # A missing or damaged data file.
    raise ConfigError(f"--{flag}: {str(e).splitlines()[0]}", flag) from None
  reporting.write_json(os.path.join(directory, "hparams.json"),
                       dict(read, data={"source": source}))
  curves = ma.figure1(ma.mnist_2nn, x, y, read["seed"], ma.NUM_THETAS,
                      parent_examples=read["examples_per_client"],
                      learning_rate=read["client_learning_rate"],
                      batch_size=read["client_batch_size"],
                      epochs=read["client_epochs"])
  reporting.write_json(os.path.join(directory, "summary.json"), {
      "status": "completed", "methods": {},
      ma.SUMMARY_KEY: ma.to_summary(curves, source)}, sealed=True)
  echo(ma.summary_line(curves))
  return directory
