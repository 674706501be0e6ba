"""The one place bakeoff writes its reports: a run's, the one across hosts, `bakeoff cmd`'s
exports. Each file is written whole or not at all (atomically, after a checkpoint a fault
test can stop at), and a directory that cannot take them is one line naming the fix."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from bakeoff.core.errors import UsageError
from bakeoff.run import interrupts
from bakeoff.store.results import write_atomic

# (file name, text) -> the text to write: a redactor's hook (bakeoff report --redact).
Postprocess = Callable[[str, str], str]


def write_outputs(out_dir: Path, outputs: Sequence[tuple[str, str]],
                  postprocess: Postprocess | None = None) -> list[Path]:
    """Write each (file name, text) into out_dir, in order; returns their paths."""
    paths = []
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in outputs:
            path = out_dir / name
            interrupts.checkpoint(f"report:{name}")  # each file whole, or not at all
            write_atomic(path, postprocess(name, text) if postprocess else text)
            paths.append(path)
    except OSError as exc:
        raise UsageError(
            f"cannot write reports to {out_dir}: {exc.strerror or exc} "
            "(check that the directory exists and is writable, or choose another one)"
        ) from None
    return paths
