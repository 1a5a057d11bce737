"""Converts a federated image split to per-client TFRecord shards (optional).

  python datasets/convert_to_tfrecords.py --dataset=inaturalist \
    --split_csv=output/inaturalist/inaturalist_user_120k.csv \
    --test_csv=output/inaturalist/inaturalist_test.csv \
    --image_root=/data/inat2017 \
    --image_paths=output/inaturalist/image_paths.csv \
    --output_dir=output/inaturalist_user_120k_tfrecords

  python datasets/convert_to_tfrecords.py --dataset=landmarks \
    --split_csv=.../federated_train.csv --test_csv=.../test.csv \
    --tar_shards=/data/gldv2/images_000.tar,... --output_dir=...

Every image is decoded first (--check_images=decode). Missing or corrupt
images are listed in --report_path; --on_bad_image=fail (default) stops with
exit status 3, --on_bad_image=skip drops them with a warning per split.
Bad flags or inputs: one `error:` line, exit status 2, e.g. a --split_csv and
--test_csv that number classes differently (checked as train_main does:
federated_vision/data/class_numbering.py; one warning line when it cannot be
checked, unless --accept_unchecked_class_numbering).
"""

import glob
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging

from federated_vision.data import class_numbering
from federated_vision.data import split_rows
from federated_vision.realworld import binary_errors as cli
from federated_vision.realworld import source_ids

# Kept in sync with image_data.CHECK_MODES / BAD_IMAGE_POLICIES; TensorFlow is
# imported only after the flags are validated.
CHECK_MODES = ["none", "exists", "decode"]
BAD_IMAGE_POLICIES = ["fail", "skip"]

FLAGS = flags.FLAGS
flags.DEFINE_enum("dataset", "inaturalist", ["inaturalist", "landmarks"],
                  "Which data set (image size, path layout).")
flags.DEFINE_string("split_csv", None, "Split CSV (any published layout).")
flags.DEFINE_string("split", None, "Client column of TFF's iNaturalist_train.csv"
                    " layout, e.g. geo_1k.")
flags.DEFINE_string("test_csv", None, "Optional image_id,class test CSV.")
flags.DEFINE_string("image_root", None, "Image directory.")
flags.DEFINE_string("image_paths", None, "Optional image_id,path CSV.")
flags.DEFINE_list("metadata_json", [], "iNaturalist train2017.json,val2017.json "
                  "(to find image paths when --image_paths is not given).")
flags.DEFINE_list("tar_shards", [], "GLD-v2 images_NNN.tar shards (globs ok).")
flags.DEFINE_list("gld_metadata_csv", [], "landmarks: GLD-v2 train.csv / "
                  "train_clean.csv, to check that --split_csv and --test_csv "
                  "number classes alike (--metadata_json does it for "
                  "inaturalist).")
flags.DEFINE_bool("accept_unchecked_class_numbering", False, "Accept, without "
                  "the warning, a --split_csv / --test_csv pair whose class "
                  "numbering cannot be checked (see federated_vision/data/"
                  "class_numbering.py).")
flags.DEFINE_string("output_dir", None, "Output directory.")
flags.DEFINE_enum("check_images", "decode", CHECK_MODES,
                  "Image check before conversion.")
flags.DEFINE_enum("on_bad_image", "fail", BAD_IMAGE_POLICIES,
                  "Missing/corrupt images: fail with the report, or skip them.")
flags.DEFINE_string("report_path", None, "Bad-image report JSON (default: "
                    "<output_dir>/image_report.json).")
flags.DEFINE_integer("image_size", None, "Crop size (default 299 iNaturalist, "
                     "224 Landmarks).")


@cli.guarded
def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  cli.require_flags(FLAGS, ["split_csv", "output_dir"])
  shards = []
  for pattern in FLAGS.tar_shards:
    hits = sorted(glob.glob(pattern))
    if not hits:
      cli.fail(f"--tar_shards: no file matches {pattern}")
    shards.extend(hits)
  if not FLAGS.image_root and not shards:
    cli.fail("give --image_root or --tar_shards")
  size = FLAGS.image_size or (299 if FLAGS.dataset == "inaturalist" else 224)
  if size < 8:
    cli.fail(f"--image_size={size} must be >= 8")
  # Bad split files fail here, in a second, before TensorFlow is imported.
  split_rows.read_split_files(FLAGS.split_csv, FLAGS.split, FLAGS.test_csv)
  if FLAGS.dataset == "inaturalist" and FLAGS.gld_metadata_csv:
    cli.fail("--gld_metadata_csv: only for --dataset=landmarks")
  if FLAGS.test_csv:
    metadata = (FLAGS.metadata_json if FLAGS.dataset == "inaturalist"
                else FLAGS.gld_metadata_csv)
    flag = ("--metadata_json" if FLAGS.dataset == "inaturalist"
            else "--gld_metadata_csv")
    warning = class_numbering.check_files(
        FLAGS.split_csv, FLAGS.test_csv, FLAGS.split,
        source_ids.for_dataset(FLAGS.dataset, metadata),
        FLAGS.accept_unchecked_class_numbering, metadata_flag=flag).warning
    if warning:
      logging.warning("%s", warning)
  from federated_vision.realworld import image_data, tfrecords  # pylint: disable=g-import-not-at-top
  from federated_vision import runtime  # pylint: disable=g-import-not-at-top
  # Importing the library changes no process-wide state; a binary installs
  # the managed TFF runtime itself (TFF's own import-time context is then
  # dropped while the interpreter is intact, not in a __del__ at exit).
  runtime.install()
  assert tuple(CHECK_MODES) == image_data.CHECK_MODES
  assert tuple(BAD_IMAGE_POLICIES) == image_data.BAD_IMAGE_POLICIES
  config = image_data.LoaderConfig(
      image_size=size, check_images=FLAGS.check_images,
      on_bad_image=FLAGS.on_bad_image,
      report_path=FLAGS.report_path or os.path.join(FLAGS.output_dir,
                                                    "image_report.json"),
      cache_dir=os.path.join(FLAGS.output_dir, "index_cache"))
  if FLAGS.dataset == "inaturalist":
    fds = image_data.load_inaturalist(
        FLAGS.split_csv, FLAGS.image_root, split=FLAGS.split,
        test_csv=FLAGS.test_csv, image_paths=FLAGS.image_paths,
        metadata_json=FLAGS.metadata_json, config=config)
  else:
    fds = image_data.load_landmarks(
        FLAGS.split_csv, image_root=FLAGS.image_root,
        tar_shards=shards or None, test_csv=FLAGS.test_csv, config=config)
  meta = tfrecords.convert_to_tfrecords(fds, FLAGS.output_dir)
  print(f"wrote {FLAGS.output_dir}: {meta['num_clients']} clients, "
        f"{meta['num_examples']} examples, {meta['num_test_examples']} test")


if __name__ == "__main__":
  app.run(main)
