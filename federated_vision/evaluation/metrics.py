"""Report metrics: relative accuracy, batch budgets, Acc@Round / Acc@Batch.

Hsu, Qi & Brown 2020: relative accuracy = federated / centralized accuracy;
the batch budget of a round is the number of local batches of its largest
client (the round's wall-clock cost on synchronous devices); Acc@Round and
Acc@Batch read the accuracy curve at a round or a cumulative batch budget.
"""

from typing import Sequence


from federated_vision.data import client_data as client_data_lib
# Acc@Round / Acc@Batch, defined TF-free for reports of finished runs.
from federated_vision.evaluation.curves import accuracy_at  # pylint: disable=unused-import


def relative_accuracy(federated: float, centralized: float) -> float:
  """federated / centralized accuracy."""
  if not centralized > 0:
    raise ValueError(f"centralized accuracy must be > 0, got {centralized}")
  return float(federated) / float(centralized)


def round_batch_budget(selected_sizes: Sequence[int],
                       spec: client_data_lib.TrainingSpec) -> int:
  """Local batches of the round's largest client under `spec`."""
  if len(selected_sizes) == 0:
    return 0
  return max(client_data_lib.num_local_batches(int(n), spec)
             for n in selected_sizes)
