"""Per-client class statistics of a partition: JSON and a stacked-bar PNG.

The PNG follows Hsu, Qi & Brown 2019, Figure 10 (and Hsu, Qi & Brown 2020,
Figure 3): one bar per client, its height the client's number of examples,
stacked by class in a fixed colour per class, so the effect of the Dirichlet
concentration alpha is visible at a glance (alpha -> 0: one colour per bar;
alpha -> inf: every bar the same mix).

Plain numpy + matplotlib's object API (no pyplot state, Agg canvas); no
TensorFlow.
"""

import math
import os
from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from federated_vision.data import indexed_splits
from federated_vision.data import partition as partition_lib
from federated_vision.evaluation.reporting import save_figure
from federated_vision.evaluation.reporting import write_json
from federated_vision.training import run_files


def counts_summary(counts: np.ndarray,
                   reference: Optional[Sequence[float]] = None) -> dict:
  """Report summary of a [clients, classes] count matrix
  (`partition.counts_stats`: sizes, classes per client, EMD)."""
  return partition_lib.counts_stats(counts, reference)


def report_from_counts(counts: np.ndarray, client_ids: Sequence[str],
                       class_names: Optional[Sequence[str]] = None,
                       metadata: Optional[Mapping[str, object]] = None,
                       summary: Optional[Mapping[str, object]] = None) -> dict:
  """`class_count_report` of a count matrix (row k = client_ids[k]).

  `summary` (`counts_summary(counts)`) is computed when not given.
  """
  counts = np.asarray(counts, np.int64)
  if len(client_ids) != counts.shape[0]:
    raise ValueError(f"client_ids has {len(client_ids)} ids for "
                     f"{counts.shape[0]} clients")
  if class_names is not None and len(class_names) != counts.shape[1]:
    raise ValueError(f"class_names has {len(class_names)} names for "
                     f"{counts.shape[1]} classes")
  return {
      "metadata": dict(metadata or {}),
      "summary": dict(summary or counts_summary(counts)),
      "class_names": None if class_names is None else [str(c) for c in class_names],
      "class_totals": counts.sum(axis=0).tolist(),
      "clients": [{"client_id": cid, "num_examples": int(row.sum()),
                   "num_classes": int((row > 0).sum()),
                   "class_counts": row.tolist()}
                  for cid, row in zip(client_ids, counts)],
  }


def class_count_report(labels: Sequence[int],
                       partition: Mapping[str, np.ndarray],
                       num_classes: Optional[int] = None,
                       class_names: Optional[Sequence[str]] = None,
                       metadata: Optional[Mapping[str, object]] = None) -> dict:
  """JSON-serialisable statistics of a partition.

  Args:
    labels: label of every example of the source set.
    partition: client id -> example indices.
    num_classes: number of classes (default: max label + 1).
    class_names: optional names, one per class.
    metadata: free-form fields copied under "metadata" (alpha, seed, data set).

  Returns:
    {"metadata", "summary" (`counts_summary`: sizes, classes per client,
    EMD), "class_names", "class_totals", "clients": [{"client_id",
    "num_examples", "num_classes", "class_counts"}]}.
  """
  counts = partition_lib.class_counts(labels, partition, num_classes)
  return report_from_counts(counts, list(partition), class_names, metadata)


def counts_from_report(report: Mapping[str, object]) -> np.ndarray:
  """The [clients, classes] count matrix back from `class_count_report`.

  Raises:
    ValueError: (one line) the report is not one: no "clients" list, a
      client without "class_counts", rows of different lengths, counts that
      are not non-negative integers, or a "num_examples" that is not their
      sum.
  """
  clients = report.get("clients") if isinstance(report, Mapping) else None
  if not isinstance(clients, list) or not clients:
    raise ValueError("not a partition report: no non-empty 'clients' list")
  rows = []
  for i, c in enumerate(clients):
    counts = c.get("class_counts") if isinstance(c, Mapping) else None
    if (not isinstance(counts, list) or not counts
        or any(isinstance(n, bool) or not isinstance(n, int) or n < 0
               for n in counts)):
      raise ValueError(f"client {i} of the partition report has no list of "
                       "non-negative integer class_counts")
    if "num_examples" in c and c["num_examples"] != sum(counts):
      raise ValueError(f"client {i} of the partition report: num_examples "
                       f"{c['num_examples']} is not the sum of its "
                       f"class_counts ({sum(counts)})")
    rows.append(counts)
  if len({len(r) for r in rows}) != 1:
    raise ValueError("the partition report's clients have class_counts of "
                     "different lengths")
  return np.asarray(rows, np.int64)


def read_counts_report(path: str) -> np.ndarray:
  """The count matrix of a `<base>_class_counts.json` written by
  `write_counts_report`, checked (`run_files.read_json`: strict JSON and its
  checksum; `counts_from_report`).

  Raises:
    RunFileError: one line naming the file and what is wrong.
  """
  remedy = "write it again (rerun the command that wrote it)"
  report = run_files.read_json(path, remedy)
  try:
    return counts_from_report(report)
  except ValueError as e:
    raise run_files.RunFileError(path, str(e), remedy) from None


def plot_class_counts(counts: np.ndarray, path: str,
                      client_ids: Optional[Sequence[str]] = None,
                      class_names: Optional[Sequence[str]] = None,
                      title: Optional[str] = None,
                      max_clients: Optional[int] = None,
                      dpi: int = 100) -> str:
  """Stacked class counts per client (Hsu et al. 2019, Figure 10) as a PNG.

  Args:
    counts: [num_clients, num_classes] non-negative counts.
    path: output .png path.
    client_ids: x tick labels (shown when there are at most 30 clients).
    class_names: legend entries (a legend is drawn for at most 20 classes).
    title: plot title.
    max_clients: plot only the first this many clients (readability).
    dpi: resolution; the figure is 10 x 4 inches.

  Returns:
    `path`.
  """
  counts = np.asarray(counts)
  if counts.ndim != 2 or counts.shape[0] == 0 or np.any(counts < 0):
    raise ValueError(f"counts must be a non-empty non-negative [clients, "
                     f"classes] matrix, got shape {counts.shape}")
  if max_clients is not None:
    if max_clients < 1:
      raise ValueError(f"max_clients must be >= 1, got {max_clients}")
    counts = counts[:max_clients]
    client_ids = None if client_ids is None else list(client_ids)[:max_clients]
  if client_ids is not None and len(client_ids) != counts.shape[0]:
    raise ValueError(f"client_ids has {len(client_ids)} ids for "
                     f"{counts.shape[0]} clients")
  # Local: matplotlib is a heavy optional dependency, loaded only to draw.
  # pylint: disable=g-import-not-at-top
  from matplotlib.backends.backend_agg import FigureCanvasAgg
  from matplotlib.figure import Figure
  from matplotlib import colormaps
  # pylint: enable=g-import-not-at-top
  num_clients, num_classes = counts.shape
  cmap = colormaps["tab10" if num_classes <= 10 else
                   "tab20" if num_classes <= 20 else "viridis"]
  colour = lambda c: cmap(c if num_classes <= 20 else c / max(num_classes - 1, 1))
  fig = Figure(figsize=(10, 4), dpi=dpi)
  FigureCanvasAgg(fig)
  ax = fig.add_subplot(1, 1, 1)
  x = np.arange(num_clients)
  bottom = np.zeros(num_clients)
  for c in range(num_classes):
    if num_classes > 20 and not counts[:, c].any():
      continue  # No legend entry, no bar: an empty class draws nothing.
    label = (class_names[c] if class_names is not None else f"class {c}")
    ax.bar(x, counts[:, c], bottom=bottom, width=1.0, color=colour(c),
           linewidth=0, label=label)
    bottom += counts[:, c]
  ax.set_xlim(-0.5, num_clients - 0.5)
  ax.set_xlabel("client")
  ax.set_ylabel("examples per class")
  if client_ids is not None and num_clients <= 30:
    ax.set_xticks(x)
    ax.set_xticklabels(client_ids, rotation=90, fontsize=7)
  if title:
    ax.set_title(title)
  if num_classes <= 20:
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
  fig.tight_layout()
  return save_figure(fig, path)


def report_basename(name: str, alpha: Optional[float] = None) -> str:
  """'<name>' or '<name>_alpha_<alpha:.2f>' (alpha inf -> 'inf')."""
  if not name or os.sep in name:
    raise ValueError(f"name must be a non-empty file-name stem, got {name!r}")
  if alpha is None:
    return name
  return f"{name}_alpha_{'inf' if math.isinf(alpha) else f'{alpha:.2f}'}"


def write_partition_report(out_dir: str, name: str, labels: Sequence[int],
                           partition: Mapping[str, np.ndarray],
                           num_classes: Optional[int] = None,
                           alpha: Optional[float] = None,
                           class_names: Optional[Sequence[str]] = None,
                           metadata: Optional[Mapping[str, object]] = None,
                           max_clients_in_plot: Optional[int] = None
                           ) -> Dict[str, str]:
  """Writes `<base>_class_counts.json` and `<base>_class_counts.png`.

  Args:
    out_dir: output directory.
    name: data set name, e.g. 'cifar10'.
    labels: source labels.
    partition: client id -> indices.
    num_classes: number of classes (default: max label + 1).
    alpha: Dirichlet concentration, recorded in names and metadata.
    class_names: optional class names.
    metadata: extra metadata for the JSON.
    max_clients_in_plot: plot only the first clients.

  Returns:
    {"json": path, "png": path}.
  """
  return write_counts_report(
      out_dir, name, partition_lib.class_counts(labels, partition, num_classes),
      list(partition), alpha=alpha, class_names=class_names,
      metadata=metadata, max_clients_in_plot=max_clients_in_plot)


def write_counts_report(out_dir: str, name: str, counts: np.ndarray,
                        client_ids: Sequence[str],
                        alpha: Optional[float] = None,
                        class_names: Optional[Sequence[str]] = None,
                        metadata: Optional[Mapping[str, object]] = None,
                        max_clients_in_plot: Optional[int] = None,
                        summary: Optional[Mapping[str, object]] = None
                        ) -> Dict[str, str]:
  """`write_partition_report` from a [clients, classes] count matrix.

  The helper the experiment binaries call once per data set (a
  `FederatedDataset` carries `class_counts`); `summary`
  (`counts_summary(counts)`) is computed when not given.
  """
  base = report_basename(name, alpha)
  meta = {"name": name}
  if alpha is not None:
    meta["alpha"] = "inf" if math.isinf(alpha) else float(alpha)
  meta.update(metadata or {})
  report = report_from_counts(counts, client_ids, class_names, meta, summary)
  json_path = write_json(os.path.join(out_dir, f"{base}_class_counts.json"),
                         report, sealed=True)
  title = (f"{name}: alpha = {meta['alpha']}, " if alpha is not None else f"{name}: ") + \
      f"EMD = {report['summary']['emd']:.3f}"
  png_path = plot_class_counts(np.asarray(counts),
                               os.path.join(out_dir, f"{base}_class_counts.png"),
                               client_ids=list(client_ids),
                               class_names=class_names, title=title,
                               max_clients=max_clients_in_plot)
  return {"json": json_path, "png": png_path}


def dirichlet_sweep(out_dir: str, name: str, labels: Sequence[int],
                    alphas: Sequence[float], num_clients: int,
                    examples_per_client: int, seed: int = 0,
                    num_classes: Optional[int] = None,
                    class_names: Optional[Sequence[str]] = None,
                    write_csv: bool = True) -> dict:
  """Hsu et al. 2019's alpha sweep: partition, CSV, JSON and PNG per alpha.

  For each alpha, `partition.dirichlet_partition(labels, num_clients,
  examples_per_client, alpha, seed=seed)` is written as a published-format
  CSV (`indexed_splits.split_filename`, finite alphas only) and reported with
  `write_partition_report`; `<name>_dirichlet_sweep.json` summarises the EMD
  and classes per client of every alpha.

  Returns:
    The summary dict: {"alphas": [{"alpha", "emd", "classes_per_client",
    "csv", "json", "png"}], ...}.
  """
  if not alphas:
    raise ValueError("alphas must not be empty")
  rows = []
  for alpha in alphas:
    part = partition_lib.dirichlet_partition(labels, num_clients,
                                             examples_per_client, alpha, seed=seed)
    counts = partition_lib.class_counts(labels, part, num_classes)
    stats = counts_summary(counts)
    paths = write_counts_report(
        out_dir, name, counts, list(part), alpha=alpha,
        class_names=class_names,
        metadata={"num_clients": num_clients,
                  "examples_per_client": examples_per_client, "seed": seed},
        summary=stats)
    csv_path = None
    if write_csv and math.isfinite(alpha):
      csv_path = indexed_splits.write_split_csv(
          os.path.join(out_dir, indexed_splits.split_filename(alpha)), part, labels)
    rows.append({"alpha": "inf" if math.isinf(alpha) else float(alpha),
                 "emd": stats["emd"],
                 "classes_per_client": stats["classes_per_client"],
                 "csv": csv_path, **paths})
  summary = {"name": name, "num_clients": num_clients,
             "examples_per_client": examples_per_client, "seed": seed,
             "alphas": rows}
  write_json(os.path.join(out_dir, f"{name}_dirichlet_sweep.json"), summary)
  return summary
