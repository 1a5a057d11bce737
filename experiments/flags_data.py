"""Flags of the `data` section (`federated_vision.tasks.DataConfig`); the
fields a task declares itself are generated (`experiments.flags_components`)."""

from absl import flags

from federated_vision import tasks


def define_flags() -> None:
  """Data-set, partition and real-world image-split flags."""
  flags.DEFINE_string("dataset", "digits", "Federated data set (task): "
                      f"{' | '.join(tasks.task_names())}. synthetic_* are "
                      "random-image twins of the real sets (same elements, "
                      "model and code path) for tests and smoke runs.")
  flags.DEFINE_string("data_source", "tfds", "Where real CIFAR/MNIST come "
                      "from: tfds | archive. 'tfds' reads a prepared "
                      "tensorflow-datasets directory (--data_dir; never "
                      "downloads); 'archive' reads the canonical files "
                      "(--archive_path).")
  flags.DEFINE_string("data_dir", None, "tensorflow-datasets data_dir "
                      "(default: tfds' own, ~/tensorflow_datasets).")
  flags.DEFINE_string("archive_path", None, "With --data_source=archive: "
                      "cifar-10-python.tar.gz / cifar-100-python.tar.gz (or a "
                      "directory holding it or its extracted folder), or the "
                      "directory of MNIST's four IDX files.")
  flags.DEFINE_string("partition", "dirichlet", "How training examples are "
                      "dealt to clients: dirichlet | iid | shards | "
                      "dirichlet_per_class. dirichlet: "
                      "Hsu et al. 2019, q_k ~ Dir(alpha p), --num_clients x "
                      "--examples_per_client; iid: a random equal share; "
                      "shards: McMahan et al. 2017, label-sorted examples cut "
                      "into 2 x --num_clients shards, 2 per client (MNIST: 200 "
                      "shards of 300); dirichlet_per_class: NIID-Bench/FedLab/"
                      "Flower label skew, each class divided over the "
                      "--num_clients clients by Dir(alpha 1_K), every example "
                      "used, sizes vary (min 10, re-drawn). digits: all but "
                      "iid (shards: K=20 gives 40 shards of 35).")
  flags.DEFINE_integer("num_clients", None, "Clients K in the partition "
                       "(default per --dataset: digits 20, cifar10/cifar100/"
                       "mnist 100, synthetic_* 10, synthetic real-world twins "
                       "6).", lower_bound=1)
  flags.DEFINE_integer("examples_per_client", None, "Examples per client for "
                       "the dirichlet and iid partitions (default: cifar 500, "
                       "mnist 600, synthetic_* 20; digits uses all its "
                       "training examples).", lower_bound=1)
  flags.DEFINE_string("split_csv", None, "A published user_id,image_id,class "
                      "split (Hsu, Qi & Brown 2020 format) to use instead of "
                      "partitioning; replaces --partition, --alpha, "
                      "--num_clients and --examples_per_client. Not for "
                      "digits.")
  flags.DEFINE_float("alpha", 0.5, "Dirichlet concentration of the class "
                     "distribution per client (0 = one class each, inf = IID); "
                     "with dirichlet_per_class, of each class's division over "
                     "the clients (> 0; inf = even).",
                     lower_bound=0.0)
  flags.DEFINE_integer("image_size", None, "Crop side S (default: 299 "
                       "inaturalist, 224 landmarks, 32 synthetic_*).",
                       lower_bound=32)
