"""The experiment binaries, `python -m experiments.<binary>`, and their parts.

Such a start imports this package first (`sys.argv[0]` is "-m" until the
binary's module is found): SIGTERM / SIGHUP handling starts here, before
the binary's imports (`interrupted.install_at_start`). Any other import of
the package changes nothing.
"""

import sys as _sys

if _sys.argv[:1] == ["-m"]:
  from experiments import interrupted as _interrupted
  _interrupted.install_at_start()
