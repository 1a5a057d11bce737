"""TFF's published `.lzma` data files (or an `.xz` of one), decompressed once.

Like TFF's `simulation.datasets.download._fetch_lzma_file`, which reads a
published `<name>.sqlite.lzma` with `lzma.LZMADecompressor()` (container
auto-detected), so either form of the archive works. Used by the CelebA and
Shakespeare SQLite readers.
"""

import lzma
import os
import shutil


def decompress(archive: str, path: str) -> None:
  """`archive` (.lzma or .xz container) -> `path`, atomically.

  Raises:
    ValueError: not an .lzma/.xz archive, or truncated (one line naming it).
  """
  tmp = f"{path}.tmp{os.getpid()}"
  try:
    with lzma.open(archive, "rb", format=lzma.FORMAT_AUTO) as src, \
        open(tmp, "wb") as dst:
      shutil.copyfileobj(src, dst, 1 << 20)
    os.replace(tmp, path)
  except (lzma.LZMAError, EOFError) as e:
    raise ValueError(f"{archive}: not an .lzma/.xz archive or truncated "
                     f"({type(e).__name__}: {e})") from None
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
