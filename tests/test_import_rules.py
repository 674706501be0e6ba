"""The import rules `make lint` holds bakeoff/ to: no module takes another's private name
(scripts/check_private_imports.py); the layer order is import-linter's ([tool.importlinter])."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _checker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("check_private_imports",
                                                  REPO / "scripts" / "check_private_imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_private_name_taken_from_another_module_is_named() -> None:
    check = _checker()
    source = ("from bakeoff.report.html import esc, _e\n"
              "from .charts import _t as t\n"
              "from bakeoff.core import __version__\n"
              "from os import _exit\n")
    found = list(check.problems(source, "x.py"))
    assert found == [
        "x.py:1: imports private _e from bakeoff.report.html: make it public or move it where "
        "it belongs",
        "x.py:2: imports private _t from .charts: make it public or move it where it belongs",
    ]


def test_bakeoff_takes_no_private_name_of_another_module() -> None:
    check = _checker()
    assert check.main([str(REPO / "bakeoff")]) == 0
