"""Reproduction suite: presets of the papers' tables and figures, the papers'
published numbers, side-by-side reports, the effective-learning-rate study,
TensorBoard HParams records and the digits claims check.

Modules: `spec` (Preset / Run / TableSpec types), `presets` (the registry),
`published` (the papers' numbers with their sources), `plan` (selecting runs,
checking data flags, full flags per run), `results` (reading run
directories), `report`, `effective_lr`, `hparams`, `claims`. Library code: no
absl flags, no `experiments` imports; importing it does not import TensorFlow.
"""
