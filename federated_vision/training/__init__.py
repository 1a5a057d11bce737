"""The parts of the federated training loop (`federated_vision.training_loop`).

One module a job: `errors` (what stops a run), `run_lock` (one run per
directory), `checkpoints` (program states), `metrics_csv` (metrics.csv),
`tensorboard` (scalars and their purge on resume), `divergence` (non-finite
checks), `progress` (the per-round display), `client_states` (per-client
state of a stateful method, versioned with the checkpoints), `resume` (what
a run resumes from, read and checked before anything is changed),
`run_files` (a run's files read back checked and written atomically).
"""
