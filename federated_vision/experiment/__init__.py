"""The experiment API: an experiment as one frozen config, and running it.

    from federated_vision.experiment import config as config_lib, runner
    config, resolved = config_lib.checked({"total_rounds": 5})  # validated
    runner.run(config, resolved)                               # results on disk

`config` (`ExperimentConfig` and its validation; the training, output, run
and execution sections in `sections`), `resolved_run` (what a validated
config derives: clients per round, each method's client-group size; the
`--dry_run` plan), `fields_read` (which fields a resolved experiment
reads), `runner` (`run(config)`),
`run_record` (which directory a run may use), `central_baseline`,
`outputs`, `averaging_runner`, `sweeps` (named grids), `report_lib` (the
results table of
many runs) and `selection` (shell-pattern selection of named items). The
binaries (`experiments/`) only turn flags into these configs; research code
imports this package, never `experiments`.

Importing this package imports nothing else (no TensorFlow).
"""
