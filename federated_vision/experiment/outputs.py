"""What a run writes beside its methods' metrics: hparams.json's content,
the partition report and the plots' title (`runner.run` calls them).

Local imports: TensorFlow-free callers (a config check) import `runner`,
which imports this module; the report and plots load their libraries when
called.
"""

from federated_vision.experiment import config as config_lib
from federated_vision.experiment import fields_read


def hparams(exp) -> dict:
  """(`exp`: a `runner.Experiment`.) hparams.json: every config field the run reads at the top level (==
  its flag; `fields_read.recorded`: none that had no effect), the config by
  section, resolved defaults, data info, partition statistics
  (`partition_stats`: not `partition`, which is the flag), each method's
  resolved settings (`method_settings`: not `methods`, which is the flag)
  and `not_read`: {field: why} of the fields left out."""
  s = exp.partition_stats
  extras = dict(
      config=fields_read.recorded(exp.config), resolved=exp.resolved.recorded(),
      not_read=fields_read.unused_fields(exp.config),
      data={k: v for k, v in exp.fed_data.info.items() if k != "label_names"},
      partition_stats={
          "num_clients": s["num_clients"], "num_examples": s["num_examples"],
          "examples_per_client_min": s["examples_per_client"]["min"],
          "examples_per_client_max": s["examples_per_client"]["max"],
          "classes_per_client_mean": s["classes_per_client"]["mean"],
          "emd": s["emd"], "emd_reference": s.get("emd_reference"),
          "num_classes": int(exp.fed_data.num_classes)},
      method_settings={m.name: dict(m.settings) for m in exp.methods})
  flags = fields_read.recorded_flat(exp.config)
  clash = sorted(set(flags) & set(extras))
  if clash:  # A flag's recorded value must never be overwritten.
    raise AssertionError(f"hparams.json keys {clash} are also flag names")
  return dict(flags, **extras)


def write_partition_report(exp) -> dict:
  """Per-client class counts (JSON) + Hsu et al. 2019 Figure-10 PNG, from
  the data set's count matrix (every loader has one)."""
  from federated_vision.evaluation import partition_report  # pylint: disable=g-import-not-at-top
  fed = exp.fed_data
  counts = fed.class_counts
  names = fed.info.get("label_names")
  info = {k: v for k, v in fed.info.items() if k != "label_names"}
  scheme = info.get("partition", "dirichlet")
  alpha = (info.get("alpha") if scheme in ("dirichlet", "dirichlet_per_class")
           else None)
  # The two conventions' alphas differ: the file name and title say which.
  name = "partition_per_class" if scheme == "dirichlet_per_class" else "partition"
  return partition_report.write_counts_report(
      exp.output_dir, name, counts, list(fed.client_data.client_ids),
      alpha=alpha,
      class_names=names if names and len(names) == counts.shape[1] else None,
      metadata={"dataset": fed.name, "seed": exp.config.training.seed, **info},
      max_clients_in_plot=100, summary=exp.partition_stats)


def plot_title(config: config_lib.ExperimentConfig, resolved, emd,
               method_settings=None) -> str:
  """The plots' title: what a reader needs to tell two runs' plots apart:
  the data, then the methods' actual settings ({name: recorded settings};
  `methods.build.display_settings`): those all methods share on one line,
  then each method's own on a line of its own."""
  from federated_vision.methods import build as method_build  # pylint: disable=g-import-not-at-top
  d, t = config.data, config.training
  part = resolved.get("partition", d.partition)
  part += f" α={d.alpha:g}" if part == "dirichlet" else ""
  shown = {name: method_build.display_settings(s)
           for name, s in (method_settings or {}).items()}
  first = next(iter(shown.values()), {})
  common = {k: v for k, v in first.items()
            if all(s.get(k) == v for s in shown.values())}

  def show(items):
    return ", ".join(f"{k}={v}" if k in ("E", "B") else
                     f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in items)

  lines = [f"{d.dataset} ({resolved.get('model')}), "
           f"K={resolved.get('num_clients')} {part}, EMD {emd:.2f}",
           ", ".join(x for x in (
               f"{resolved.get('clients_per_round')} clients/round",
               show(common.items()), f"seed {t.seed}") if x)]
  for name, s in shown.items():
    own = [(k, v) for k, v in s.items() if k not in common]
    if own:
      lines.append(f"{name}: {show(own)}")
  return "\n".join(lines)
