"""Mixing federated and centralized data (Augenstein et al., *Jointly
Learning from Decentralized (Federated) and Centralized Data to Mitigate
Distribution Shift*): `strategy` (the `MixingStrategy` component, the run's
`MixingSettings`, validation), `strategies` (the paper's strategies: no
mixing, parallel training, example transfer, gradient transfer, the
oracle), `central_data` (the server's examples per round, example transfer
and the oracle's data), `parallel_training` and `gradient_transfer` (their
processes), `payload` (bytes broadcast), `scenarios` (a task's federated and
centralized split) and `summary` (the per-group report)."""
