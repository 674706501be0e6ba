"""The params: how long a call of the traced function busy-waits, and how many calls a
trial makes (a number, or 'auto' for the seed's count), calls' check that names the fix,
and the seed's scenario table (`bakeoff tracing-scenarios`)."""

from __future__ import annotations

from bakeoff.room import Case, ParamValue, RunContext, UsageError

# The seed's six scenarios: function duration (µs) -> calls the app makes. Its counts keep
# every scenario at a few seconds of work and the 0 µs one at 200k events.
SEED_CALLS: dict[int, int] = {0: 100_000, 5: 100_000, 50: 50_000, 100: 10_000, 500: 5_000,
                              1000: 2_000}
SEED_SCENARIOS = (
    (0, "Empty Function", "worst case: minimal work"),
    (5, "5 µs Function", "ultra-fast API"),
    (50, "50 µs Function", "fast API (e.g. hipGetDevice)"),
    (100, "100 µs Function", "typical API (e.g. hipMalloc)"),
    (500, "500 µs Function", "medium API (e.g. hipMemcpy)"),
    (1000, "1000 µs Function", "slow API (large allocations)"),
)
# Durations outside the table get about this much work per trial (the seed's 2-5 s).
AUTO_WORK_US = 2_000_000
MIN_CALLS, MAX_CALLS = 100, 10_000_000
MAX_DURATION_US = 1_000_000
MAX_TRIAL_WORK_S = 600  # more busy-waiting than this in one trial is a typo, not a plan



def is_count(text: str) -> bool:
    """ASCII digits, few enough for int(): str.isdigit() alone takes '²' (int() refuses it)
    and 5000 nines (int() refuses more than 4300 digits)."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def calls_for(duration_us: int, calls: str) -> int:
    """The number of calls a case makes.

    'auto': the seed's count for its durations; elsewhere about 2 s of work, between 100 and
    100k calls. 'auto/K': that count divided by K (at least 100): the quick and default
    profiles keep the seed's proportions at a fraction of its time. A number: that many.
    """
    if is_count(calls):
        return int(calls)
    base, _, divisor = calls.partition("/")
    assert base == "auto", calls  # _check_calls let nothing else through
    if duration_us in SEED_CALLS:
        n = SEED_CALLS[duration_us]
    else:
        n = max(100, min(100_000, round(AUTO_WORK_US / max(duration_us, 1))))
    return max(MIN_CALLS, n // int(divisor or 1))


def check_calls(value: ParamValue) -> str | None:
    text = str(value)
    if is_count(text):
        if not MIN_CALLS <= int(text) <= MAX_CALLS:
            return f"give {MIN_CALLS} to {MAX_CALLS:,} calls, or auto"
        return None
    base, slash, divisor = text.partition("/")
    if base == "auto" and (not slash or (is_count(divisor) and int(divisor) >= 1)):
        return None
    return ("give a number of calls (e.g. 10000), auto (the seed's count for each duration) "
            "or auto/K (that count divided by K, e.g. auto/10)")


def not_for_ever(case: Case, _ctx: RunContext) -> str | None:
    duration = int(case.param("duration_us"))
    calls = calls_for(duration, str(case.param("calls")))
    work_s = duration * calls / 1e6
    if work_s > MAX_TRIAL_WORK_S:
        return (f"--param duration_us={duration} with calls={calls} busy-waits {work_s:,.0f} s "
                f"per trial (limit {MAX_TRIAL_WORK_S} s); lower calls or duration_us")
    return None


def scenarios_command(argv: list[str]) -> int:
    """bakeoff tracing-scenarios [INDEX...]: the seed's scenario table, and the --param that
    selects the given ones (the seed's --scenarios 3 4 5)."""
    picked = []
    for arg in argv:
        if not is_count(arg) or int(arg) >= len(SEED_SCENARIOS):
            raise UsageError(f"tracing-scenarios: '{arg}' is not a scenario index; "
                             f"give 0 to {len(SEED_SCENARIOS) - 1}")
        picked.append(int(arg))
    print(f"{'index':>5}  {'scenario':18} {'duration':>9} {'calls (auto)':>13}  represents")
    for i, (us, name, what) in enumerate(SEED_SCENARIOS):
        print(f"{i:>5}  {name:18} {us:>6} µs {SEED_CALLS[us]:>13,}  {what}")
    if picked:
        durations = ",".join(str(SEED_SCENARIOS[i][0]) for i in sorted(set(picked)))
        print(f"\nbakeoff run tracing-overhead --param duration_us={durations} --param calls=auto")
    return 0
