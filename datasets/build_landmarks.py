"""Builds Landmarks-User-160k from GLD-v2-clean (Hsu, Qi & Brown 2020).

  python datasets/build_landmarks.py \
    --train_clean_csv=.../train_clean.csv \
    --attribution_csv=.../train_attribution.csv \
    [--train_csv=.../train.csv] --output_dir=output/landmarks

The landmark rule (>= 30 images, >= 10 users) and user rule (>= 30 images of
>= 5 landmarks) are iterated to a fixed point, so they hold on the output.
Writes `federated_train.csv`, `test.csv`, `authors.csv`,
`landmark_classes.csv`, `stats.json`, PNGs. With --image_root or --tar_shards
the clean images are checked first (--check_images=exists|decode); bad ones are
listed in --report_path and fail the build (exit status 3) or, with
--on_bad_image=skip, are dropped before the rules. Bad input: one `error:`
line, exit status 2.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from federated_vision.realworld import binary_errors as cli
from federated_vision.realworld import landmarks

FLAGS = flags.FLAGS
flags.DEFINE_string("train_clean_csv", None, "GLD-v2 train_clean.csv.")
flags.DEFINE_string("attribution_csv", None, "GLD-v2 train_attribution.csv.")
flags.DEFINE_string("train_csv", None, "Optional GLD-v2 train.csv (counted).")
flags.DEFINE_string("output_dir", None, "Output directory.")
flags.DEFINE_integer("min_landmark_images", 30, "Landmark rule: images.")
flags.DEFINE_integer("min_landmark_users", 10, "Landmark rule: users.")
flags.DEFINE_integer("min_user_images", 30, "User rule: images.")
flags.DEFINE_integer("min_user_landmarks", 5, "User rule: landmarks.")
flags.DEFINE_bool("plots", True, "Write PNG figures.")
flags.DEFINE_string("image_root", None, "GLD-v2 image directory (a/b/c/<id>."
                    "jpg, or TFF's flat cache): if given, clean images are checked first.")
flags.DEFINE_list("tar_shards", [], "GLD-v2 images_NNN.tar shards to check "
                  "instead of --image_root (globs ok).")
flags.DEFINE_enum("check_images", "exists", ["exists", "decode"],
                  "Image check: existence or full decode.")
flags.DEFINE_enum("on_bad_image", "fail", ["fail", "skip"],
                  "Bad images: fail (exit 3) or drop before the rules.")
flags.DEFINE_string("report_path", None, "Bad-image report JSON (default "
                    "<output_dir>/image_report.json).")


@cli.guarded
def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  cli.require_flags(FLAGS, ["train_clean_csv", "attribution_csv", "output_dir"])
  for name in ("min_landmark_images", "min_landmark_users", "min_user_images",
               "min_user_landmarks"):
    if getattr(FLAGS, name) < 1:
      cli.fail(f"--{name}={getattr(FLAGS, name)} must be >= 1")
  config = landmarks.GldConfig(
      min_landmark_images=FLAGS.min_landmark_images,
      min_landmark_users=FLAGS.min_landmark_users,
      min_user_images=FLAGS.min_user_images,
      min_user_landmarks=FLAGS.min_user_landmarks, plots=FLAGS.plots)
  stats = landmarks.build_landmarks(
      FLAGS.train_clean_csv, FLAGS.attribution_csv, FLAGS.output_dir,
      train_csv=FLAGS.train_csv, config=config,
      image_check=cli.image_check_config(FLAGS, FLAGS.output_dir))
  t = stats["train"]
  print(f"wrote {FLAGS.output_dir}: {t['num_clients']} users, "
        f"{t['num_examples']} train images, {t['num_classes']} landmarks, "
        f"{stats['test']['num_examples']} test images "
        f"({stats['fixed_point_iterations']} fixed-point iterations)")


if __name__ == "__main__":
  app.run(main)
