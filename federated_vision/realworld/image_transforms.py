"""In-graph image reading, decoding and augmentation of the real-world loaders.

An element {'path': string, 'range': int64[3], 'y': int64} (or a TFRecord
element holding the bytes as 'image') becomes {'x': float32 [S, S, 3] in
[0, 1], 'y': int64}: `train_map_fn(element, seed)` draws an Inception-style
random-resized crop and a horizontal flip with stateless ops (same seed, same
input), `eval_map_fn(element)` takes a centre crop. `range` = (offset,
length, file_size) of the image inside `path` (a tar shard member), or
(0, -1, -1) for a whole file. Used for iNaturalist and Landmarks (Hsu, Qi &
Brown 2020, ECCV, Section 6.5: random crop resized to 299x299 / 224x224
"with scale and aspect ratio augmentation"; the horizontal flip is ours:
the paper names no flip, `LoaderConfig.flip` turns it off).
"""

import tensorflow as tf

from federated_vision.realworld import image_config


def read_image_bytes(path: tf.Tensor, byte_range: tf.Tensor) -> tf.Tensor:
  """Bytes of an image: the whole file, or a byte range (tar member)."""
  byte_range = tf.cast(byte_range, tf.int64)
  offset, length, size = byte_range[0], byte_range[1], byte_range[2]

  def whole():
    return tf.io.read_file(path)

  def member():
    return tf.data.FixedLengthRecordDataset(
        path, record_bytes=tf.maximum(length, 1), header_bytes=offset,
        footer_bytes=tf.maximum(size - offset - length, 0)
    ).take(1).get_single_element()
  return tf.cond(length < 0, whole, member)


def decode_rgb(image_bytes: tf.Tensor) -> tf.Tensor:
  """JPEG (or PNG/GIF/BMP) bytes -> uint8 [H, W, 3]."""
  image = tf.io.decode_image(image_bytes, channels=3, expand_animations=False)
  image.set_shape([None, None, 3])
  return image


def random_resized_crop(image: tf.Tensor, size: int, seed: tf.Tensor,
                        scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)) -> tf.Tensor:
  """Inception-style crop (area and aspect-ratio jitter) resized to size x size.

  Stateless: the same `seed` ([2] int64) gives the same crop.
  """
  begin, crop_size, _ = tf.image.stateless_sample_distorted_bounding_box(
      tf.shape(image), bounding_boxes=tf.zeros([1, 0, 4], tf.float32),
      seed=seed, min_object_covered=0.0, aspect_ratio_range=ratio,
      area_range=scale, max_attempts=10, use_image_if_no_bounding_boxes=True)
  crop = tf.slice(image, begin, crop_size)
  out = tf.image.resize(tf.cast(crop, tf.float32) / 255.0, [size, size],
                        method="bilinear", antialias=True)
  return tf.clip_by_value(out, 0.0, 1.0)


def center_crop(image: tf.Tensor, size: int, fraction: float = 0.875) -> tf.Tensor:
  """Central square-ish crop of `fraction` of each side, resized; [0, 1]."""
  image = tf.cast(image, tf.float32) / 255.0
  if fraction < 1:
    image = tf.image.central_crop(image, fraction)
  out = tf.image.resize(image, [size, size], method="bilinear", antialias=True)
  return tf.clip_by_value(out, 0.0, 1.0)


def _element_bytes(element):
  if "image" in element:  # TFRecord shards hold the bytes themselves.
    return element["image"]
  return read_image_bytes(element["path"], element["range"])


def make_map_fns(config: image_config.LoaderConfig):
  """(train_map_fn(element, seed), eval_map_fn(element)) for `config`."""
  size = int(config.image_size)

  def train_map_fn(element, seed):
    # Independent streams for the crop and the flip, both keyed by `seed`.
    crop_seed, flip_seed = tf.unstack(
        tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2))
    image = decode_rgb(_element_bytes(element))
    x = random_resized_crop(image, size, crop_seed, config.crop_scale,
                            config.crop_ratio)
    if config.flip:
      x = tf.image.stateless_random_flip_left_right(x, seed=flip_seed)
    x = tf.ensure_shape(x, [size, size, 3])
    return {"x": x, "y": tf.cast(element["y"], tf.int64)}

  def eval_map_fn(element):
    image = decode_rgb(_element_bytes(element))
    x = tf.ensure_shape(center_crop(image, size, config.eval_crop_fraction),
                        [size, size, 3])
    return {"x": x, "y": tf.cast(element["y"], tf.int64)}
  return train_map_fn, eval_map_fn
