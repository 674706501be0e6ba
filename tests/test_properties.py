"""Property-based tests: the param parser and the results loader never crash on any input."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_store import make_run

from bakeoff import store
from bakeoff.errors import UsageError
from bakeoff.model import Param, parse_bytes
from bakeoff.plan import parse_param_overrides

SCALES = {"": 1, "B": 1, "K": 1024, "KiB": 1024, "M": 1024**2, "MiB": 1024**2, "GiB": 1024**3}


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(SCALES)))
def test_sizes_parse_exactly(n: int, suffix: str) -> None:
    assert parse_bytes(f"{n}{suffix}") == n * SCALES[suffix]
    assert parse_bytes(f" {n} {suffix.lower()} ") == n * SCALES[suffix]


@given(st.text(max_size=30))
def test_any_text_is_a_size_or_a_value_error(text: str) -> None:
    try:
        value = parse_bytes(text)
    except ValueError:
        return
    assert isinstance(value, int) and value >= 0


@given(st.text(max_size=30), st.sampled_from(["bytes", "int", "float", "str"]))
def test_param_parse_is_a_value_or_a_usage_error(text: str, kind: str) -> None:
    param = Param("p", kind, "a param", check=lambda v: None)  # type: ignore[arg-type]
    try:
        value = param.parse(text)
    except UsageError as exc:
        assert str(exc).startswith("--param p")
        assert "\n" not in str(exc)
        return
    assert value is not None


@given(st.lists(st.text(max_size=20), max_size=5))
def test_param_overrides_are_parsed_or_refused(items: list[str]) -> None:
    try:
        out = parse_param_overrides(items)
    except UsageError as exc:
        assert "--param" in str(exc) and "\n" not in str(exc)
        return
    assert len(out) == len(items)
    assert all(values and all(v for v in values) for values in out.values())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


def _load_text(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "results.json").write_text(text)
        try:
            store.load(Path(d))
        except UsageError as exc:
            assert "\n" not in str(exc)


@settings(max_examples=200)
@given(json_values)
def test_loader_refuses_arbitrary_json_cleanly(value: Any) -> None:
    _load_text(json.dumps(value))


@settings(max_examples=300)
@given(st.data())
def test_loader_refuses_damaged_results_cleanly(data: st.DataObject) -> None:
    doc = store.run_to_json(make_run())
    # Damage one place: drop a key or replace a value, at the top or inside a trial.
    target = data.draw(st.sampled_from(["top", "trial", "case", "benchmark"]))
    node: dict[str, Any] = {"top": doc, "trial": doc["trials"][0],
                            "case": doc["trials"][0]["case"],
                            "benchmark": doc["benchmarks"]["demo"]}[target]
    key = data.draw(st.sampled_from(sorted(node)))
    if data.draw(st.booleans()):
        del node[key]
    else:
        node[key] = data.draw(json_values)
    _load_text(json.dumps(doc))


@given(st.binary(max_size=200))
def test_loader_refuses_bytes_cleanly(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        Path(d, "results.json").write_bytes(raw)
        with contextlib.suppress(UsageError):
            store.load(Path(d))
