"""A signed estimate error whose runs mostly give one value (SignedError.mode_count): an
estimator stuck on one answer, as the address hash is under heavy reuse, where at a large
mean each run's estimate rests on one or two decisions and is 0 in most runs. Its RMS has a
tight interval that only says the runs were alike, so the answer says what they were: "its
estimate is 0 in every run (20 of 20: error −100 %)"."""

from __future__ import annotations

from bakeoff.report.format import fmt_value
from bakeoff.stats.estimates import SignedError

# From this share of the runs on one value, that value is the answer's figure.
STUCK_SHARE = 0.5
ZERO_ESTIMATE = -100.0  # (estimate - true) / true x 100 of an estimate of 0


def stuck_words(e: SignedError, unit: str) -> str | None:
    """'estimates 0 in every run (20 of 20: error −100 %)' where at least half the runs give
    one value; None otherwise (the RMS with its CI is then the answer)."""
    if e.n < 2 or e.mode_count < 2 or e.mode_count < STUCK_SHARE * e.n:
        return None
    share = f"every run ({e.n} of {e.n}" if e.mode_count == e.n else \
        f"{e.mode_count} of {e.n} runs ("
    sep = ": " if e.mode_count == e.n else ""
    if unit == "%" and e.mode == ZERO_ESTIMATE:
        return (f"estimates 0 in {share}{sep}error {fmt_value(e.mode, unit)}; RMS "
                f"{fmt_value(e.rms, unit)})")
    return (f"errs by the same {fmt_value(e.mode, unit)} in {share}{sep}RMS "
            f"{fmt_value(e.rms, unit)})")
