"""The built-in method components, each declared in a module of its own
exactly as a user's module declares its own (`methods.register`).

Importing this package imports every module in it, in name order (so adding
a built-in is adding a module here; nothing else lists them).
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
  importlib.import_module(f"{__name__}.{_module.name}")
