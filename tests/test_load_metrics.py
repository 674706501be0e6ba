"""stats/load_metrics.py: the metric that decides better on a busy machine is one ranked above
the one that decided (instructions, then cpu_time, then wall_time, as measured beside two CPU
hogs) and recorded by every run; a metric the table did not rank is never second-guessed."""

from __future__ import annotations

from bakeoff.stats.load_metrics import better_metric, better_metric_text


def test_the_best_ranked_metric_every_run_recorded() -> None:
    every = [{"wall_time", "cpu_time", "instructions"}] * 3
    assert better_metric("wall_time", every) == "instructions"
    assert better_metric("cpu_time", every) == "instructions"
    assert better_metric("instructions", every) is None  # nothing ranks above it
    # One run without the count: cpu_time, which all recorded.
    some = [*every, {"wall_time", "cpu_time"}]
    assert better_metric("wall_time", some) == "cpu_time"
    assert better_metric("cpu_time", some) is None
    assert better_metric("wall_time", [{"wall_time"}]) is None
    assert better_metric("wall_time", []) is None  # no runs: nothing recorded
    # user_time and a room's metric were not measured against the ranking.
    assert better_metric("user_time", every) is None
    assert better_metric("ns_per_op", every) is None


def test_the_words_name_both_metrics_what_moves_them_and_the_command() -> None:
    said = better_metric_text("wall_time", "instructions", "these runs also recorded", "do X")
    assert said.startswith("decided on wall_time, which waiting for a CPU lengthens; these "
                           "runs also recorded instructions (user-space work only")
    assert said.endswith('(docs/STATISTICS.md, "Each metric per decision"): do X')
    said = better_metric_text("cpu_time", "instructions", "have", "do Y")
    assert said.startswith("decided on cpu_time, which sharing a CPU still moves")
