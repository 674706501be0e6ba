"""A script of scripts/ loaded as a module, for the tests that call its functions."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from conftest import REPO


def load(file_name: str, module_name: str) -> ModuleType:
    """scripts/<file_name> as the module <module_name> (scripts have no package)."""
    spec = importlib.util.spec_from_file_location(module_name, REPO / "scripts" / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
