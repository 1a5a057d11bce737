"""Builds iNaturalist-User-120k and iNaturalist-Geo-k (Hsu, Qi & Brown 2020).

  python datasets/build_inaturalist.py \
    --train_json=.../train2017.json \
    --train_locations=.../train2017_locations.json \
    --val_json=.../val2017.json --output_dir=output/inaturalist

Writes the per-split CSVs (`user_id,image_id,class,label`: `class` = the
paper's contiguous class, `label` = the iNaturalist 2017 category id), TFF's
`iNaturalist_train.csv` layout, `inaturalist_test.csv`, `image_paths.csv`,
`stats.json` and PNG figures. The balanced set is drawn from images with a
user id and coordinates, so every split has exactly --examples_per_class per
class (--balance_from=all: the first version's draw from every image). With --image_root the images are checked first
(--check_images=exists|decode); bad ones are listed in --report_path and
fail the build (exit status 3) or, with --on_bad_image=skip, are dropped before
any filtering. Bad input: one `error:` line, exit status 2.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging

from federated_vision.realworld import binary_errors as cli
from federated_vision.realworld import inaturalist

FLAGS = flags.FLAGS
flags.DEFINE_string("train_json", None, "iNaturalist 2017 train2017.json.")
flags.DEFINE_string("train_locations", None, "train2017_locations.json.")
flags.DEFINE_string("val_json", None, "Optional val2017.json -> test split.")
flags.DEFINE_string("output_dir", None, "Output directory.")
flags.DEFINE_integer("min_examples_per_class", 100,
                     "Keep classes with at least this many training images.")
flags.DEFINE_integer("examples_per_class", 100,
                     "Images drawn from each kept class.")
flags.DEFINE_list("geo_max_examples", ["30k", "10k", "3k", "1k", "300", "100"],
                  "N_max values of the geo splits (e.g. 30k,1k,100).")
flags.DEFINE_integer("geo_min_examples", 1,
                     "N_min: geo cells with fewer examples are dropped.")
flags.DEFINE_enum("balance_from", "complete", ["complete", "all"],
                  "complete: draw the balanced set from images with a user "
                  "id and coordinates (every split gets exactly "
                  "--examples_per_class per class); all: from every image, "
                  "then drop those lacking either from the user/geo split.")
flags.DEFINE_enum("missing_user", "drop", ["drop", "fail"],
                  "--balance_from=all: balanced images without user_id are "
                  "dropped (reported) or fail the build.")
flags.DEFINE_integer("seed", 0, "Seed of the class-balancing draw.")
flags.DEFINE_bool("plots", True, "Write PNG figures.")
flags.DEFINE_string("image_root", None, "If given, images are checked before "
                    "building (missing/corrupt ones listed in --report_path).")
flags.DEFINE_enum("check_images", "exists", ["exists", "decode"],
                  "Image check: existence or full decode.")
flags.DEFINE_enum("on_bad_image", "fail", ["fail", "skip"],
                  "Bad images: fail (exit 3) or drop before balancing.")
flags.DEFINE_string("report_path", None, "Bad-image report JSON (default "
                    "<output_dir>/image_report.json).")


@cli.guarded
def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  cli.require_flags(FLAGS, ["train_json", "train_locations", "output_dir"])
  config = inaturalist.InatConfig(
      min_examples_per_class=FLAGS.min_examples_per_class,
      examples_per_class=FLAGS.examples_per_class,
      geo_max_examples=tuple(cli.int_list("geo_max_examples",
                                          FLAGS.geo_max_examples)),
      geo_min_examples=FLAGS.geo_min_examples,
      balance_from=FLAGS.balance_from, missing_user=FLAGS.missing_user,
      seed=FLAGS.seed, plots=FLAGS.plots)
  stats = inaturalist.build_inaturalist(
      FLAGS.train_json, FLAGS.train_locations, FLAGS.output_dir,
      val_json=FLAGS.val_json, config=config,
      image_check=cli.image_check_config(FLAGS, FLAGS.output_dir))
  for name, s in stats["splits"].items():
    logging.info("%s: %d clients, %d examples, %d classes, EMD %.3f", name,
                 s["num_clients"], s["num_examples"], s["num_classes"],
                 s.get("emd", float("nan")))
  print(f"wrote {FLAGS.output_dir}: {stats['num_balanced_examples']} balanced "
        f"examples, {stats['num_classes']} classes, splits "
        f"{', '.join(stats['splits'])}")


if __name__ == "__main__":
  app.run(main)
