"""Class numbering of a train split and a test file from different writers.

Issue 20, "Class numbering across sources" / acceptance check 4: TFF's
`iNaturalist_train.csv` with the published `test.csv` (and Landmarks files,
which never carry `label`) must not be read together unchecked. Budget: two
train_main runs that stop before any training, in this process
(`in_process.run`: the binary's exit status, error and warning lines; a
real process's exit 2 for a refused flag is tests/project/test_docs_output.py's
"bad flag value" row); the rest in-process too.
"""

import logging
import os
import subprocess
import sys

import pytest

import realworld_fixtures as fixtures
import in_process
from conftest import REPO
from federated_vision.experiment import config as config_lib
from federated_vision import tasks
from federated_vision.data import class_numbering as cn
from federated_vision.data import split_io
from federated_vision.data import split_rows
from federated_vision.errors import ConfigError
from federated_vision.realworld import source_ids
from federated_vision.tasks import realworld

INAT = "iNaturalist 2017 category"
LOGGER = "federated_vision.tasks.realworld"
# Category id -> class: the TFF-layout train file's numbering (A) and a test
# file that numbers the same categories differently (B).
NUMBERING_A = {0: 0, 1: 1, 2: 2}
NUMBERING_B = {0: 2, 1: 0, 2: 1}
VAL_PER_CLASS = 2


@pytest.fixture(scope="module")
def inat(tmp_path_factory):
  """iNaturalist 2017 JSONs (categories 0, 1, 2) and split files of three
  writers: TFF's cache (numbering A), the published test.csv (A or B)."""
  root = tmp_path_factory.mktemp("inat")
  train, val, _, _ = fixtures.write_small_inaturalist(
      str(root), class_sizes=(4, 3, 3), val_per_class=VAL_PER_CLASS,
      with_images=False)
  stem = lambda r: fixtures.image_stem(r.image_id)
  tff_rows = [(f"u{k % 2}", stem(r), NUMBERING_A[r.category_id])
              for k, r in enumerate(train)]
  tff_test = [(stem(r), NUMBERING_A[r.category_id]) for r in val]
  tff_train, tff_test_path = fixtures.write_tff_inaturalist(
      str(root / "tff"), tff_rows, tff_test)
  out = {"root": root, "tff_train": tff_train, "tff_test": tff_test_path,
         "tff_rows": tff_rows, "jsons": [str(root / "train2017.json"),
                                         str(root / "val2017.json")]}
  for name, numbering in (("agree", NUMBERING_A), ("disagree", NUMBERING_B)):
    rows = [(stem(r), numbering[r.category_id], r.category_id) for r in val]
    out[f"{name}_rows"] = rows
    out[name] = fixtures.write_published_test(str(root / name), rows)
  # Our builder's pair: the TFF layout + inaturalist_test.csv, one directory.
  builder = root / "builder"
  fixtures.write_tff_inaturalist(str(builder), tff_rows)
  out["builder_train"] = str(builder / fixtures.TFF_INAT_TRAIN)
  out["builder_test"] = str(builder / "inaturalist_test.csv")
  os.replace(fixtures.write_published_test(str(builder), out["agree_rows"]),
             out["builder_test"])
  return out


def _mismatch(inat, train, test):
  """The expected message for the TFF train file vs the B-numbered test:
  class 0 is category 0 on the train file's line 2 (its first image) but
  category 1 on the test file's line 4 (the first val image of category 1)."""
  return (f"{train} and {test} number classes differently: class 0 is {INAT} "
          f"0 in {train}:2 (image {inat['tff_rows'][0][1]}) but {INAT} 1 in "
          f"{test}:{2 + VAL_PER_CLASS} (image "
          f"{inat['disagree_rows'][VAL_PER_CLASS][0]}), per "
          f"{','.join(inat['jsons'])}")


def _warning(train, test, reason):
  return (f"class numbering of {train} and {test} could not be checked "
          f"({reason}); if they come from one class map, "
          "--accept_unchecked_class_numbering silences this warning")


def _train_main(inat, tmp_path, test, *extra):
  return in_process.run_as_binary(
      "experiments.train_main", "--dataset=inaturalist",
      f"--split_csv={inat['tff_train']}", "--inat_split=user_120k",
      f"--test_csv={test}", f"--image_root={tmp_path}",
      "--algorithm=fedavg", "--clients_per_round=2", "--total_rounds=1",
      "--centralized_epochs=0", f"--root_output_dir={tmp_path}",
      "--experiment_name=cn", *extra)


def test_train_main_mismatch_with_metadata_exits_2_naming_both_files(
    inat, tmp_path):
  res = _train_main(inat, tmp_path, inat["disagree"],
                    f"--metadata_json={','.join(inat['jsons'])}")
  assert res.returncode == 2, res.stderr[-3000:]
  assert "Traceback" not in res.stderr
  errors = [l for l in res.stderr.splitlines() if "error:" in l]
  assert errors == [f"train_main.py: error: --split_csv={inat['tff_train']}: "
                    + _mismatch(inat, inat["tff_train"], inat["disagree"])]
  assert "could not be checked" not in res.stderr


def test_train_main_without_metadata_logs_one_warning_line(inat, tmp_path):
  # No metadata: the one warning line, then the run goes on (and stops at
  # the images, which this fixture does not have: no training here).
  res = _train_main(inat, tmp_path, inat["disagree"])
  assert res.returncode == 2 and "Traceback" not in res.stderr
  warned = [l for l in res.stderr.splitlines() if "could not be checked" in l]
  assert len(warned) == 1, res.stderr[-3000:]
  assert warned[0].endswith("] " + _warning(
      inat["tff_train"], inat["disagree"], "they come from different "
      "writers and no --metadata_json was given"))
  errors = [l for l in res.stderr.splitlines() if "error:" in l]
  assert len(errors) == 1 and "--on_bad_image" in errors[0], errors


def _data(parse, tmp_path, split_csv, test_csv, *extra, dataset="inaturalist"):
  args = [f"--dataset={dataset}", f"--split_csv={split_csv}",
          f"--test_csv={test_csv}", f"--image_root={tmp_path}",
          f"--root_output_dir={tmp_path}"]
  if os.path.basename(split_csv) == fixtures.TFF_INAT_TRAIN:
    args.append("--inat_split=user_120k")
  return config_lib.from_flags(parse(*args, *extra)).data


def _check(data, caplog):
  """(how, [warning messages]) of the task's class-numbering check."""
  caplog.clear()
  with caplog.at_level(logging.WARNING, logger=LOGGER):
    how = realworld.check_class_numbering(tasks.get_task(data.dataset), data)
  return how, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_mismatch_with_metadata_is_a_config_error(inat, parse, tmp_path):
  data = _data(parse, tmp_path, inat["tff_train"], inat["disagree"],
               f"--metadata_json={','.join(inat['jsons'])}")
  with pytest.raises(ConfigError) as e:
    realworld.check_class_numbering(tasks.get_task("inaturalist"), data)
  assert str(e.value) == (f"--split_csv={inat['tff_train']}: " + _mismatch(
      inat, inat["tff_train"], inat["disagree"]))
  # The acceptance flag accepts an *unchecked* pair, never a mismatch found.
  data = _data(parse, tmp_path, inat["tff_train"], inat["disagree"],
               f"--metadata_json={','.join(inat['jsons'])}",
               "--accept_unchecked_class_numbering")
  with pytest.raises(ConfigError, match="number classes differently"):
    realworld.check_class_numbering(tasks.get_task("inaturalist"), data)


def test_unchecked_warns_once_unless_accepted(inat, parse, tmp_path, caplog):
  data = _data(parse, tmp_path, inat["tff_train"], inat["disagree"])
  assert _check(data, caplog) == (cn.UNCHECKED, [_warning(
      inat["tff_train"], inat["disagree"],
      "they come from different writers and no --metadata_json was given")])
  data = _data(parse, tmp_path, inat["tff_train"], inat["disagree"],
               "--accept_unchecked_class_numbering")
  assert _check(data, caplog) == (cn.UNCHECKED, [])
  # TFF's own pair: same writer, but neither file carries label.
  data = _data(parse, tmp_path, inat["tff_train"], inat["tff_test"])
  assert _check(data, caplog) == (cn.UNCHECKED, [_warning(
      inat["tff_train"], inat["tff_test"], "neither file carries a label "
      "column and no --metadata_json was given")])


def test_agreeing_numberings_pass_silently(inat, parse, tmp_path, caplog):
  jsons = f"--metadata_json={','.join(inat['jsons'])}"
  for test in ("agree", "tff_test"):
    data = _data(parse, tmp_path, inat["tff_train"], inat[test], jsons)
    assert _check(data, caplog) == (cn.METADATA, []), test
  # Our builder's iNaturalist_train.csv + inaturalist_test.csv: one writer.
  data = _data(parse, tmp_path, inat["builder_train"], inat["builder_test"])
  assert _check(data, caplog) == (cn.SAME_WRITER, [])
  # The same test file next to another directory's train file: unchecked.
  data = _data(parse, tmp_path, inat["tff_train"], inat["builder_test"])
  assert _check(data, caplog)[0] == cn.UNCHECKED


def test_metadata_without_some_test_class_warns(inat, parse, tmp_path,
                                                caplog):
  # val2017.json only: no train image is covered, so no class is checked.
  data = _data(parse, tmp_path, inat["tff_train"], inat["disagree"],
               f"--metadata_json={inat['jsons'][1]}")
  assert _check(data, caplog) == (cn.UNCHECKED, [_warning(
      inat["tff_train"], inat["disagree"], "3 of 3 test classes, e.g. class "
      f"0, have no image in {inat['jsons'][1]} in one of the files")])


def _published(tmp_path, train_rows, test_rows):
  train = fixtures.write_published_train(str(tmp_path / "pub"), train_rows)
  test = fixtures.write_published_test(str(tmp_path / "other"), test_rows)
  return split_rows.read_split_rows(train), split_rows.read_test_rows(test)


TRAIN_ROWS = [("u1", "a", 0, 17), ("u1", "b", 1, 2033), ("u2", "c", 2, 5088)]


def test_label_class_direct_check(tmp_path):
  # Label 5088 is class 2 in train, class 1 in test.
  train, test = _published(tmp_path, TRAIN_ROWS,
                           [("t1", 0, 17), ("t2", 1, 5088)])
  with pytest.raises(split_io.SplitFormatError) as e:
    cn.check_class_numbering(train, test)
  assert str(e.value) == (
      f"{train.path} and {test.path} number classes differently: label 5088 "
      f"is class 2 in {train.path}:4 but class 1 in {test.path}:3")
  # Class 1 is label 2033 in train, label 9 (unknown to train) in test.
  train, test = _published(tmp_path, TRAIN_ROWS, [("t1", 1, 9)])
  with pytest.raises(split_io.SplitFormatError) as e:
    cn.check_class_numbering(train, test)
  assert str(e.value) == (
      f"{train.path} and {test.path} number classes differently: class 1 is "
      f"label 2033 in {train.path}:3 but label 9 in {test.path}:2")
  # Agreeing labels: checked, no metadata needed, whatever the writers.
  train, test = _published(tmp_path, TRAIN_ROWS,
                           [("t1", 2, 5088), ("t2", 0, 17)])
  assert cn.check_class_numbering(train, test) == cn.Result(cn.LABELS)


def test_writer_forms(inat, tmp_path):
  form = lambda p: (cn.train_form(p).layout, cn.train_form(p).has_label)
  assert form(inat["tff_train"]) == ("tff", False)
  published = fixtures.write_published_splits(str(tmp_path))
  assert form(published["inat_train"]["path"]) == ("per_split", True)
  assert form(published["landmarks_train"]["path"]) == ("per_split", False)
  assert cn.test_form(inat["tff_test"]) == cn.Form(inat["tff_test"], "tff",
                                                   False)
  assert cn.test_form(inat["agree"]).layout == "per_split"
  pairs = {(inat["tff_train"], inat["tff_test"]): True,
           (inat["tff_train"], inat["agree"]): False,
           (inat["builder_train"], inat["builder_test"]): True,
           (inat["tff_train"], inat["builder_test"]): False,
           (published["landmarks_train"]["path"],
            published["landmarks_test"]["path"]): True,
           (published["inat_train"]["path"],
            published["landmarks_test"]["path"]): False}
  for (train, test), same in pairs.items():
    assert cn.same_writer(cn.train_form(train), cn.test_form(test)) == same, (
        train, test)


@pytest.fixture(scope="module")
def gld(tmp_path_factory):
  """GLD-v2 train.csv / train_clean.csv and a Landmarks pair (no label)."""
  root = tmp_path_factory.mktemp("gld")
  images = [fixtures.GldImage(fixtures.gld_image_id(k), 100 + 10 * (k % 3),
                              f"Author {k % 2}") for k in range(9)]
  fixtures.write_gld_metadata(str(root), images)
  cls = {100: 0, 110: 1, 120: 2}
  train = fixtures.write_published_train(
      str(root / "built"), [(k % 2, im.image_id, cls[im.landmark_id])
                            for k, im in enumerate(images[:6])],
      with_label=False)
  test_rows = [(im.image_id, cls[im.landmark_id]) for im in images[6:]]
  good = fixtures.write_published_test(str(root / "built"), test_rows,
                                       with_label=False)
  swapped = [(i, {0: 1, 1: 0}.get(c, c)) for i, c in test_rows]
  bad = fixtures.write_published_test(str(root / "published"), swapped,
                                      with_label=False)
  return {"root": root, "images": images, "train": train, "good": good,
          "bad": bad, "test_rows": test_rows}


def test_landmarks_pairs_checked_through_gld_csvs(gld, parse, tmp_path,
                                                  caplog):
  train_csv = str(gld["root"] / "train.csv")
  meta = f"--gld_metadata_csv={train_csv}"
  data = _data(parse, tmp_path, gld["train"], gld["good"], meta,
               dataset="landmarks")
  assert _check(data, caplog) == (cn.METADATA, [])
  # Builder-made or published, Landmarks files never carry label: without
  # metadata even the builder's own pair is unchecked.
  data = _data(parse, tmp_path, gld["train"], gld["good"], dataset="landmarks")
  assert _check(data, caplog) == (cn.UNCHECKED, [_warning(
      gld["train"], gld["good"], "neither file carries a label column and no "
      "--gld_metadata_csv was given")])
  data = _data(parse, tmp_path, gld["train"], gld["bad"], meta,
               dataset="landmarks")
  with pytest.raises(ConfigError) as e:
    realworld.check_class_numbering(tasks.get_task("landmarks"), data)
  # Class 0 is image 0's landmark 100 in train (line 2), image 7's landmark
  # 110 in the swapped test file (line 3).
  images = gld["images"]
  assert str(e.value) == (
      f"--split_csv={gld['train']}: {gld['train']} and {gld['bad']} number "
      "classes differently: class 0 is GLD-v2 landmark 100 in "
      f"{gld['train']}:2 (image {images[0].image_id}) but GLD-v2 landmark 110 "
      f"in {gld['bad']}:3 (image {images[7].image_id}), per {train_csv}")


def test_gld_metadata_forms(gld, tmp_path):
  clean = str(gld["root"] / "train_clean.csv")
  expected = {im.image_id: im.landmark_id for im in gld["images"]}
  assert dict(source_ids.gld_landmarks([clean]).of_image) == expected
  conflict = tmp_path / "train.csv"
  conflict.write_text(f"id,url,landmark_id\n{gld['images'][0].image_id},u,"
                      "999\n")
  with pytest.raises(split_io.SplitFormatError) as e:
    source_ids.gld_landmarks([clean, str(conflict)])
  assert str(e.value) == (
      f"{conflict}:2: image {gld['images'][0].image_id} has landmark_id 999, "
      f"but {clean}:2 gives it landmark_id 100")
  other = tmp_path / "x.csv"
  other.write_text("a,b\n1,2\n")
  with pytest.raises(split_io.SplitFormatError, match=(
      r"x\.csv:1: header a,b is neither GLD-v2 train\.csv")):
    source_ids.gld_landmarks([str(other)])


def test_flags_only_where_read(inat, gld, parse, tmp_path):
  with pytest.raises(ConfigError) as e:
    _data(parse, tmp_path, inat["tff_train"], inat["agree"],
          f"--gld_metadata_csv={gld['root'] / 'train.csv'}")
  assert str(e.value) == ("--gld_metadata_csv: only for --dataset=landmarks "
                          "(GLD-v2)")
  with pytest.raises(ConfigError) as e:
    config_lib.from_flags(parse("--dataset=synthetic_landmarks",
                                f"--root_output_dir={tmp_path}",
                                "--accept_unchecked_class_numbering"))
  assert str(e.value).startswith("--accept_unchecked_class_numbering: not "
                                 "used by --dataset=synthetic_landmarks")
  with pytest.raises(ConfigError) as e:
    config_lib.from_flags(parse("--dataset=digits",
                                f"--root_output_dir={tmp_path}",
                                "--accept_unchecked_class_numbering"))
  assert str(e.value) == ("--accept_unchecked_class_numbering: not used by "
                          "--dataset=digits")
  with pytest.raises(ConfigError) as e:
    _data(parse, tmp_path, gld["train"], gld["good"],
          f"--gld_metadata_csv={tmp_path}/none.csv", dataset="landmarks")
  assert str(e.value) == (f"--gld_metadata_csv={tmp_path}/none.csv: no such "
                          "file")


def _rows(path, lines):
  """Writes a per-split train (rows of 3) or test (rows of 2) file, no label."""
  train = len(lines[0]) == 3
  path = fixtures._write_text_csv(  # pylint: disable=protected-access
      path, split_io.COLUMNS if train else split_io.TEST_COLUMNS, lines)
  return (split_rows.read_split_rows(path) if train
          else split_rows.read_test_rows(path))


def test_check_with_metadata_exact(tmp_path):
  src = cn.source_ids([("a", 7), ("b", 8), ("c", 7), ("t1", 8), ("t2", 7),
                       ("t3", 9)], "landmark", ["m.csv"])
  train = _rows(tmp_path / "train.csv", [("u", "a", 0), ("u", "b", 1),
                                         ("v", "c", 0), ("v", "x", 2)])
  # Agreeing; class 2 has no image in the metadata (x): unchecked.
  test = _rows(tmp_path / "test.csv", [("t1", 1), ("t2", 0), ("y", 2)])
  assert cn.check_with_metadata(train, test, src) == (2,)
  # Landmark 9 (t3) never occurs in train: nothing to compare, unchecked.
  test = _rows(tmp_path / "test2.csv", [("t1", 1), ("t3", 2)])
  assert cn.check_with_metadata(train, test, src) == (2,)
  # Landmark 8 is class 1 in train, class 2 in test (class 2's train image x
  # is not in the metadata, so only the landmark -> class direction sees it).
  test = _rows(tmp_path / "test3.csv", [("t2", 0), ("t1", 2)])
  with pytest.raises(split_io.SplitFormatError) as e:
    cn.check_with_metadata(train, test, src)
  assert str(e.value) == (
      f"{train.path} and {test.path} number classes differently: landmark 8 "
      f"is class 1 in {train.path}:3 (image b) but class 2 in {test.path}:3 "
      "(image t1), per m.csv")
  # An empty test file (valid): nothing to number, no warning.
  empty = tmp_path / "empty.csv"
  empty.write_text("image_id,class\n")
  assert cn.check_class_numbering(
      train, split_rows.read_test_rows(str(empty))) == cn.Result(cn.NO_TEST_ROWS)
  # Inside one file: a class that is two landmarks, a landmark two classes.
  bad = _rows(tmp_path / "bad1.csv", [("u", "a", 0), ("u", "b", 0)])
  with pytest.raises(split_io.SplitFormatError) as e:
    cn.check_with_metadata(bad, test, src)
  assert str(e.value) == (f"{bad.path}:3: class 0 is landmark 8 (image b) but "
                          "landmark 7 on line 2 (image a), per m.csv")
  bad = _rows(tmp_path / "bad2.csv", [("u", "a", 0), ("u", "c", 1)])
  with pytest.raises(split_io.SplitFormatError) as e:
    cn.check_with_metadata(bad, test, src)
  assert str(e.value) == (f"{bad.path}:3: landmark 7 is class 1 (image c) but "
                          "class 0 on line 2 (image a), per m.csv")


def test_convert_to_tfrecords_checks_the_numbering_too(gld, tmp_path):
  res = subprocess.run(
      [sys.executable, os.path.join(REPO, "datasets", "convert_to_tfrecords.py"),
       "--dataset=landmarks", f"--split_csv={gld['train']}",
       f"--test_csv={gld['bad']}", f"--image_root={tmp_path}",
       f"--gld_metadata_csv={gld['root'] / 'train.csv'}",
       f"--output_dir={tmp_path / 'out'}"],
      capture_output=True, text=True, timeout=300, check=False,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert res.returncode == 2, res.stderr[-2000:]
  images = gld["images"]
  assert res.stderr.strip().splitlines() == [
      f"error: {gld['train']} and {gld['bad']} number classes differently: "
      f"class 0 is GLD-v2 landmark 100 in {gld['train']}:2 (image "
      f"{images[0].image_id}) but GLD-v2 landmark 110 in {gld['bad']}:3 "
      f"(image {images[7].image_id}), per {gld['root'] / 'train.csv'}"]
  assert not (tmp_path / "out").exists()


def test_inaturalist_categories_from_json(inat, tmp_path):
  src = source_ids.inaturalist_categories(inat["jsons"])
  # 10 train + 6 val images; stems as in the split files, categories 0..2.
  expected = {i: c for _, i, c in inat["tff_rows"]}  # Numbering A = identity.
  expected.update({i: lbl for i, _, lbl in inat["agree_rows"]})
  assert dict(src.of_image) == expected and len(expected) == 16
  assert src.files == tuple(inat["jsons"]) and src.what == INAT
  # A file without annotations (like test2017.json) adds no image.
  test_json = tmp_path / "test2017.json"
  test_json.write_text('{"images": [{"id": 1, "file_name": "x/abc.jpg"}]}')
  assert dict(source_ids.inaturalist_categories(
      [str(test_json)]).of_image) == {}
  # One stem in two files (train and a copy of it).
  copy = tmp_path / "copy.json"
  copy.write_text((inat["root"] / "train2017.json").read_text())
  first = fixtures.small_inaturalist_records((4, 3, 3))[0]
  with pytest.raises(ValueError) as e:
    source_ids.inaturalist_categories([inat["jsons"][0], str(copy)])
  assert str(e.value) == (
      f"{copy}: image {first.image_id} has file stem "
      f"{fixtures.image_stem(first.image_id)}, like image {first.image_id} of "
      f"{inat['jsons'][0]}; the stem is the published image_id, so it must "
      "be unique")
  bad = tmp_path / "bad.json"
  bad.write_text('{"images": [{"id": 1, "file_name": "a.jpg"}], "annotations"'
                 ': [{"image_id": 1, "category_id": "x"}]}')
  with pytest.raises(ValueError) as e:
    source_ids.inaturalist_categories([str(bad)])
  assert str(e.value) == (f"{bad}: annotations[0].category_id = 'x' is not "
                          "an integer")
