"""Deprecated alias of `federated_vision.realworld.synthetic` (the twins).

Kept only so callers written against the old module keep working while the
experiment binaries move to `synthetic`; test-file writers now live in
`tests/realworld_fixtures.py`, the real-scale generators in
`benchmarks/bench_realworld_builders.py`.
"""

from federated_vision.realworld.synthetic import (  # pylint: disable=unused-import
    synthetic_inaturalist, synthetic_landmarks, write_synthetic_split)
