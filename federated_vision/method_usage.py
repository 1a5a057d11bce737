"""Which hyper-parameters each method reads (no flag that silently does nothing).

Every registered algorithm and variant (`federated_vision.methods`) declares
the `methods.HyperParameters` fields it reads; a method reads the union of its
algorithm's and its variants' (`fields_read`). `experiments.usage` refuses a
hyper-parameter flag that no method of the run reads and leaves it out of the
recorded config.

The built-in declarations follow the builders in `method_builtins.py`:
  * fedavg (McMahan et al. 2017, Algorithm 1): local E, B, client learning
    rate; server SGD with eta_s.
  * fedavgm (Hsu, Qi & Brown 2019, Section 3): fedavg's plus the server
    momentum beta.
  * fedsgd (McMahan et al. 2017, Section 2): B = inf and E = 1 whatever the
    flags say (`methods.fedsgd_client_spec`), so neither --client_batch_size
    nor --client_epochs.
  * scaffold (Karimireddy et al. 2020, Algorithm 1): local E, B, eta_l;
    server SGD with eta_g.
  * fedir (Hsu, Qi & Brown 2020, Section 5.2): --fedir_target.
  * fedprox (Li et al. 2020, eq. 2): --fedprox_mu.
  * fedvc (Hsu, Qi & Brown 2020, Section 5.3): --virtual_client_size (N_VC).

An algorithm or variant registered elsewhere (--extra_modules) calls
`declare_reads(name, fields)`; one that declares nothing is taken to read
every hyper-parameter (ours: nothing is known about it, so no flag of it is
refused).
"""

import dataclasses
from typing import Dict, FrozenSet, Iterable

from federated_vision import methods as methods_lib

HYPER_PARAMETERS = tuple(
    f.name for f in dataclasses.fields(methods_lib.HyperParameters))
_LOCAL = ("client_epochs", "client_batch_size", "client_learning_rate")

_READS: Dict[str, FrozenSet[str]] = {
    "fedavg": frozenset(_LOCAL + ("server_learning_rate",)),
    "fedavgm": frozenset(_LOCAL + ("server_learning_rate", "server_momentum")),
    "fedsgd": frozenset({"client_learning_rate", "server_learning_rate"}),
    "scaffold": frozenset(_LOCAL + ("server_learning_rate",)),
    "fedir": frozenset({"fedir_target"}),
    "fedprox": frozenset({"fedprox_mu"}),
    "fedvc": frozenset({"virtual_client_size"}),
}


def declare_reads(name: str, fields: Iterable[str]) -> None:
  """Declares the hyper-parameters algorithm / variant `name` reads.

  Raises:
    ValueError: a field that is not a `HyperParameters` field.
  """
  fields = frozenset(fields)
  unknown = fields - set(HYPER_PARAMETERS)
  if unknown:
    raise ValueError(f"{name}: {sorted(unknown)} are not hyper-parameters "
                     f"({', '.join(HYPER_PARAMETERS)})")
  _READS[name] = fields


def component_reads(name: str) -> FrozenSet[str]:
  """The fields algorithm / variant `name` reads (all if undeclared)."""
  return _READS.get(name, frozenset(HYPER_PARAMETERS))


def fields_read(config: methods_lib.MethodConfig) -> FrozenSet[str]:
  """The hyper-parameters one method reads: its algorithm's and variants'."""
  out = set(component_reads(config.algorithm))
  for v in config.variants:
    out |= component_reads(v)
  return frozenset(out)


def readers(field: str) -> Iterable[str]:
  """Built-in and declared components reading `field` (for messages)."""
  return sorted(n for n, f in _READS.items() if field in f)
