"""The program protocol parser on good and malformed lines."""

from __future__ import annotations

import pytest

from bakeoff.run.protocol import ProtocolError, parse_output

GOOD = """\
{"type":"meta","timer":"clock_gettime(CLOCK_MONOTONIC_RAW)","timer_overhead_ns":18.5}
{"type":"sample","metric":"ns_per_op","value":7084.0}

{"type":"sample","metric":"ns_per_op","value":7100}
{"type":"counter","name":"events_lost","value":0}
"""


def test_parses_meta_samples_and_counters() -> None:
    out = parse_output(GOOD)
    assert out.meta == {"timer": "clock_gettime(CLOCK_MONOTONIC_RAW)", "timer_overhead_ns": 18.5}
    assert {m: list(v) for m, v in out.samples.items()} == {"ns_per_op": [7084.0, 7100.0]}
    assert out.counters == {"events_lost": 0.0}


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("hello world", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
        ('{"type":"sample","metric":"x"}', "'value' must be a number"),
        ('{"type":"sample","metric":"x","value":"12"}', "'value' must be a number"),
        ('{"type":"sample","metric":"x","value":true}', "'value' must be a number"),
        ('{"type":"sample","metric":"x","value":NaN}', "not a JSON object"),
        ('{"type":"sample","metric":"x","value":Infinity}', "not a JSON object"),
        ('{"type":"sample","metric":"x","value":1e999}', "not finite"),
        ('{"type":"sample","value":1}', "'metric' must be a non-empty string"),
        ('{"type":"counter","name":"","value":1}', "'name' must be a non-empty string"),
        ('{"type":"bogus"}', "unknown type"),
        ('{"metric":"x","value":1}', "unknown type"),
        ('{"type":"sample","metric":"x","value":1', "not a JSON object"),
    ],
)
def test_malformed_lines_name_the_line(line: str, needle: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_output(GOOD + line + "\n")
    assert needle in str(err.value)
    assert "line 6" in str(err.value)


@pytest.mark.parametrize("value", ["0", "-0", "7084.0", "-1.5e-3", "12E+4", "1e308", "5"])
def test_fast_and_general_paths_agree(value: str) -> None:
    """bench.c's exact sample line skips json.loads; the same value spaced differently
    takes the general path. Both must read the same number."""
    fast = parse_output(f'{{"type":"sample","metric":"m","value":{value}}}\n')
    general = parse_output(f'{{ "type": "sample", "metric": "m", "value": {value} }}\n')
    assert list(fast.samples["m"]) == list(general.samples["m"]) == [float(value)]


@pytest.mark.parametrize("value", ["01", "1.", ".5", "1e", "+1", "0x10", "1_000"])
def test_fast_path_is_no_more_lenient_than_json(value: str) -> None:
    with pytest.raises(ProtocolError):
        parse_output(f'{{"type":"sample","metric":"m","value":{value}}}\n')
