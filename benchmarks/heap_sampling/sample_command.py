"""`bakeoff sample [--scheme S] [--mean BYTES] [--timing] [--json FILE] -- CMD`: runs any
program under the heap sampler (libbakeoff_sampler.so preloaded) and prints what it saw."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bakeoff.room import UsageError, format_bytes, parse_bytes

KIB = 1024
SEED_MEAN = 4 * KIB  # the seed's default SAMPLER_POISSON_MEAN_BYTES
SAMPLER_SO = "heap_sampling/libbakeoff_sampler.so"

# --scheme of `bakeoff sample`: our variant names and the sampler's own names.
SCHEMES = {
    "poisson": "POISSON", "poisson-tagged": "POISSON_TAGGED",
    "stateless-hash": "STATELESS_HASH", "hash": "STATELESS_HASH",
    "combined": "COMBINED", "none": "NONE",
}


# The mean's range, as the spec's param `mean` declares it (min, max) and --mean checks it.
MIN_MEAN, MAX_MEAN = 1, 2**40


_SAMPLE_USAGE = ("bakeoff sample [--scheme poisson|poisson-tagged|stateless-hash|combined|none] "
                 "[--mean BYTES] [--timing] [--json FILE] -- CMD [ARGS...]")


def _parse_sample_args(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    opts: dict[str, Any] = {"scheme": "COMBINED", "mean": SEED_MEAN, "timing": False,
                            "json": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return opts, argv[i + 1:]
        if not arg.startswith("-"):
            return opts, argv[i:]  # the command starts here; "--" is optional
        name, eq, inline = arg.partition("=")
        if name in ("-h", "--help"):
            print(f"usage: {_SAMPLE_USAGE}\n\nRuns CMD with libbakeoff_sampler.so preloaded "
                  "and prints the sampler's summary on stderr; exits with CMD's status.")
            raise SystemExit(0)
        if name == "--timing" and not eq:
            opts["timing"] = True
            i += 1
            continue
        if name not in ("--scheme", "--mean", "--json"):
            raise UsageError(f"sample: unknown option {name}; usage: {_SAMPLE_USAGE}")
        if eq:
            value = inline
        elif i + 1 < len(argv):
            value = argv[i + 1]
            i += 1
        else:
            raise UsageError(f"sample: {name} needs a value; usage: {_SAMPLE_USAGE}")
        i += 1
        if name == "--scheme":
            key = value.lower().replace("_", "-")
            if key not in SCHEMES:
                raise UsageError(f"sample: --scheme {value} is unknown; use poisson, "
                                 "poisson-tagged, stateless-hash, combined or none")
            opts["scheme"] = SCHEMES[key]
        elif name == "--mean":
            try:
                mean = parse_bytes(value)
            except ValueError as exc:
                raise UsageError(f"sample: --mean {exc}") from None
            if not MIN_MEAN <= mean <= MAX_MEAN:
                raise UsageError(f"sample: --mean {value} must be from "
                                 f"{format_bytes(MIN_MEAN)} to {format_bytes(MAX_MEAN)} (e.g. "
                                 "4KiB as the seed, 512KiB as Go, 2MiB as tcmalloc)")
            opts["mean"] = mean
        else:
            opts["json"] = Path(value)
    return opts, []


def _sampler_path() -> Path:
    from bakeoff.room import build_dir  # here: it loads the room registry, which a spec need not

    path = build_dir() / SAMPLER_SO
    if not path.is_file():
        raise UsageError(f"sample: {path} is not built; run make build")
    if any(c in str(path) for c in " :\t"):
        # ld.so splits LD_PRELOAD at spaces and colons, and has no quoting.
        raise UsageError(f"sample: {path} has a space or colon, which LD_PRELOAD cannot "
                         "carry; build bakeoff in a path without them")
    return path


def _run_with_sigint_ignored(cmd: list[str], env: dict[str, str]) -> int:
    """CMD gets Ctrl-C from the terminal itself; we wait for it, as `time` does."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            proc = subprocess.Popen(cmd, env=env)
        except FileNotFoundError:
            print(f"bakeoff sample: cannot run {cmd[0]}: command not found", file=sys.stderr)
            return 127
        except PermissionError:
            print(f"bakeoff sample: cannot run {cmd[0]}: permission denied", file=sys.stderr)
            return 126
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)
    return 128 - code if code < 0 else code


def _pct(v: Any) -> str:
    return f"{v:+.2f}%" if isinstance(v, int | float) else "n/a"


def _sigma_pct(mean: int, true_bytes: int) -> str:
    """1-sigma bound of a relative error for independent decisions: sqrt(m / bytes)."""
    return f"±{100 * math.sqrt(mean / true_bytes):.2f}%" if true_bytes > 0 else "n/a"


def format_summary(s: dict[str, Any], cmd: list[str]) -> str:
    """The sampler's JSON summary as a few lines for a person."""
    mean = int(s["mean_bytes"])
    lines = [
        f"heap sampling of {' '.join(cmd)} (pid {s['pid']}, scheme {s['scheme']}, mean "
        f"{format_bytes(mean)})",
        f"  true: {s['allocations']} allocations, {s['frees']} frees, "
        f"{format_bytes(s['allocated_bytes'])} allocated (usable bytes; "
        f"{format_bytes(s['requested_bytes'])} requested), {format_bytes(s['live_bytes'])} "
        f"live at exit in {s['live_blocks']} blocks",
    ]
    for prefix, name in (("poisson", "Poisson"), ("hash", "stateless hash")):
        if f"{prefix}_samples" not in s:
            continue
        samples = s[f"{prefix}_samples"]
        share = 100 * samples / s["allocations"] if s["allocations"] else 0.0
        lines.append(
            f"  {name}: {samples} samples ({share:.2f}% of allocations, "
            f"{format_bytes(s[f'{prefix}_sampled_bytes'])}); estimated total "
            f"{format_bytes(s[f'{prefix}_est_total_bytes'])} "
            f"(error {_pct(s.get(f'{prefix}_total_error_pct'))}, 1σ "
            f"{_sigma_pct(mean, s['allocated_bytes'])}), live "
            f"{format_bytes(s[f'{prefix}_est_live_bytes'])} "
            f"(error {_pct(s.get(f'{prefix}_live_error_pct'))}, 1σ "
            f"{_sigma_pct(mean, s['live_bytes'])})")
    if s.get("timing"):
        lines.append(f"  decision cost, TSC ticks (ns) per decision, the timer's in-place cost "
                     f"subtracted; TSC {s.get('tsc_ghz', 0):.3f} GHz, tight-loop timer floor "
                     f"{s.get('timer_floor_ticks')} ticks:")
        for prefix in ("none", "poisson", "hash"):
            parts = []
            for path in ("malloc", "free"):
                ticks = s.get(f"{prefix}_{path}_ticks_per_decision")
                if ticks is not None:
                    parts.append(f"{path} {ticks:.1f} ({s[f'{prefix}_{path}_ns_per_decision']:.1f}"
                                 f" ns)")
            if parts:
                lines.append(f"    {prefix}: " + ", ".join(parts))
    lines.append("  (1σ assumes independent decisions: address reuse makes the hash's error "
                 "larger; see METHOD.md)" if "hash_samples" in s else "")
    return "\n".join(line for line in lines if line)


def sample_command(argv: list[str]) -> int:
    """Run a program under the heap sampler and print its summary (exit status: the program's)."""
    opts, cmd = _parse_sample_args(argv)
    if not cmd:
        raise UsageError(f"sample: no command given; usage: {_SAMPLE_USAGE}")
    preload = _sampler_path()
    tmp = Path(tempfile.mkdtemp(prefix=f"bakeoff-{os.getpid()}-sample-"))  # mode 0700
    try:
        summary_file = tmp / "summary.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("SAMPLER_")}
        env.update({
            "LD_PRELOAD": " ".join(filter(None, [str(preload), os.environ.get("LD_PRELOAD")])),
            "SAMPLER_SCHEME": opts["scheme"],
            "SAMPLER_POISSON_MEAN_BYTES": str(opts["mean"]),
            "SAMPLER_TIMING": "1" if opts["timing"] else "0",
            "SAMPLER_OUTPUT": str(summary_file),
        })
        code = _run_with_sigint_ignored(cmd, env)
        if not summary_file.is_file():
            print(f"bakeoff sample: no summary from {cmd[0]}: it ended without running exit "
                  "handlers (killed by a signal, or _exit)", file=sys.stderr)
            return code
        text = summary_file.read_text()
        if opts["json"] is not None:
            opts["json"].write_text(text)
        print(format_summary(json.loads(text), cmd), file=sys.stderr)
        return code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
