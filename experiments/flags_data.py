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
  # Real-world splits (Hsu, Qi & Brown 2020): --dataset=inaturalist|landmarks.
  flags.DEFINE_string("test_csv", None, "inaturalist/landmarks: the "
                      "image_id,class[,label] test set (e.g. the builders' "
                      "inaturalist_test.csv / test.csv); required.")
  flags.DEFINE_string("image_root", None, "inaturalist: the directory holding "
                      "train_val_images/ (required); landmarks: the GLD-v2 "
                      "image directory (a/b/c/<id>.jpg, or TFF's flat images/<id>.jpg cache), "
                      "or use --tar_shards.")
  flags.DEFINE_string("image_paths_csv", None, "inaturalist: an image_id,path "
                      "CSV (the builder's image_paths.csv); paths are relative "
                      "to --image_root.")
  flags.DEFINE_list("metadata_json", [], "inaturalist: train2017.json, "
                    "val2017.json to resolve image paths (instead of "
                    "--image_paths_csv), e.g. for TFF's published CSV.")
  flags.DEFINE_string("inat_split", None, "inaturalist: the client column of "
                      "TFF's iNaturalist_train.csv layout (e.g. user_120k, "
                      "geo_1k); not needed for a builder's per-split CSV.")
  flags.DEFINE_list("tar_shards", [], "landmarks: GLD-v2 images_NNN.tar "
                    "shards (comma-separated paths or globs) instead of "
                    "--image_root.")
  flags.DEFINE_list("gld_metadata_csv", [], "landmarks: GLD-v2 train.csv "
                    "(id,url,landmark_id) and/or train_clean.csv "
                    "(landmark_id,images), to check that --split_csv and "
                    "--test_csv number classes alike (as --metadata_json "
                    "does for inaturalist).")
  flags.DEFINE_bool("accept_unchecked_class_numbering", False,
                    "inaturalist/landmarks: when the class numbering of "
                    "--split_csv and --test_csv cannot be checked (files from "
                    "different writers, or neither with a label column, and "
                    "no --metadata_json / --gld_metadata_csv), accept it "
                    "without the warning; a mismatch found is still an error.")
  flags.DEFINE_string("check_images", "exists", "inaturalist/landmarks: check "
                      "images when opening the split: none | exists (stat "
                      "calls) | decode (slow).")
  flags.DEFINE_string("on_bad_image", "fail", "inaturalist/landmarks: missing "
                      "or corrupt images (listed in --image_report_path) "
                      "either fail the run or are skipped (dropped, counted): "
                      "fail | skip.")
  flags.DEFINE_string("image_report_path", None, "Bad-image report JSON "
                      "(default: <root_output_dir>/<experiment_name>/"
                      "image_report.json).")
  flags.DEFINE_string("index_cache_dir", None, "Where the split's example "
                      "index is cached (default: <root_output_dir>/"
                      ".image_index).")
  flags.DEFINE_integer("image_size", None, "Crop side S (default: 299 "
                       "inaturalist, 224 landmarks, 32 synthetic_*).",
                       lower_bound=32)
