"""scikit-learn's digits (the default, download-free task).

The task owns its config section (`DigitsOptions`, `config_fields`):
--imbalance_sigma.
"""

import dataclasses
import math
from typing import Optional

from federated_vision import config_fields
from federated_vision.errors import ConfigError, bad, one_line
from federated_vision.tasks import base


@dataclasses.dataclass(frozen=True)
class DigitsOptions:
  """The digits task's own data settings (`--dataset=digits`).

  Attributes:
    imbalance_sigma: None for equal client sizes, else log-normal sizes with
      this sigma (ours: a heavy-tailed size skew for FedVC's claims,
      `data.digits.load_federated`).
  """
  imbalance_sigma: Optional[float] = config_fields.option(
      None, "client sizes are log-normal with this sigma (heavy-tailed) "
      "instead of equal.", lower_bound=0.0)

  def validate(self) -> None:
    """Raises ConfigError unless sigma is unset or a finite number >= 0."""
    s = self.imbalance_sigma
    if s is not None and not (s >= 0 and math.isfinite(s)):
      raise bad("imbalance_sigma", s, "must be a finite number >= 0")


def _check(task, data, given):
  if data.examples_per_client is not None:
    raise ConfigError("--examples_per_client: not used by --dataset=digits "
                      "(its 1,438 training examples are shared by the clients)",
                      "examples_per_client")
  k = data.num_clients if data.num_clients is not None else task.num_clients
  unused = {"shards": (("alpha", "imbalance_sigma"), "2 label-sorted shards "
                       "of equal size per client"),
            "dirichlet_per_class": (("imbalance_sigma",), "it sets the "
                                    "client sizes itself")}
  names, why = unused.get(data.partition, ((), ""))
  for name in names:
    if name in given or getattr(data, name) != getattr(base.DataConfig(), name):
      raise ConfigError(f"--{name}: not used by --partition={data.partition} "
                        f"({why})", name)
  if not 1 <= k <= 300:
    raise bad("num_clients", k, "must be in [1, 300] for --dataset=digits "
              "(1,438 training examples)")


def _data(task, data, resolved, context):
  del task
  from federated_vision.data import digits  # pylint: disable=g-import-not-at-top
  try:
    return digits.load_federated(resolved["num_clients"], data.alpha,
                                 seed=context.seed,
                                 imbalance_sigma=data.imbalance_sigma,
                                 partition=data.partition)
  except ValueError as e:
    raise bad("num_clients", resolved["num_clients"], one_line(e)) from None


def _scenario(task, data, resolved, context, missing_classes):
  """--mixing: every client's copies of --missing_classes (default 8,9) go to
  the server (`mixing.scenarios.digits_scenario`, equal client sizes)."""
  del task
  from federated_vision.mixing import scenarios as mixing_scenarios  # pylint: disable=g-import-not-at-top
  if data.imbalance_sigma is not None:
    raise ConfigError("--imbalance_sigma and --mixing: the digits mixing "
                      "scenario uses equal client sizes", "imbalance_sigma")
  if data.partition != "dirichlet":
    raise ConfigError(f"--partition={data.partition} and --mixing: the digits "
                      "mixing scenario uses Dirichlet(--alpha) clients",
                      "partition")
  try:
    return mixing_scenarios.digits_scenario(
        "8,9" if missing_classes is None else missing_classes,
        resolved["num_clients"], data.alpha, seed=context.seed)
  except ValueError as e:
    raise bad("missing_classes", missing_classes, one_line(e)) from None


base.register_task(base.Task(
    "digits", "digits", "digits_cnn", _data,
    reads=frozenset({"partition", "num_clients", "alpha"}),
    options=DigitsOptions,
    num_clients=20, partitions=("dirichlet", "shards", "dirichlet_per_class"),
    check=_check,
    description="scikit-learn's 8x8 digits, Dirichlet(alpha) over K clients "
                "(equal or log-normal sizes), per-class Dirichlet or "
                "McMahan's 2 shards per client; no download; --mixing: "
                "--missing_classes held by the server",
    scenario_fn=_scenario))
