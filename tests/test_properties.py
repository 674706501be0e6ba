"""Property-based tests: the param parser and the results loader never crash on any input."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_store import make_run

from bakeoff.core.errors import UsageError
from bakeoff.core.units import parse_bytes
from bakeoff.declare import registry
from bakeoff.declare.model import Param
from bakeoff.plan.cases import parse_param_overrides
from bakeoff.store import results as store

SCALES = {"": 1, "B": 1, "K": 1024, "KiB": 1024, "M": 1024**2, "MiB": 1024**2, "GiB": 1024**3}


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(SCALES)))
@pytest.mark.slow(live=False)
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
@pytest.mark.slow(live=False)
def test_loader_refuses_arbitrary_json_cleanly(value: Any) -> None:
    _load_text(json.dumps(value))


@settings(max_examples=300)
@given(st.data())
@pytest.mark.slow(live=False)
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


# ---- every real param, and numbers of any length --------------------------------------------

REAL_PARAMS = [(bench.name, p) for bench in registry.discover().values() for p in bench.params]

# Text a user might type for a number: signs, digits (any count, any script), units, spaces.
number_like = st.from_regex(
    r"\A\s?[-+]?[0-9\u00b2\u0661]{0,45}(\.[0-9]{0,3})?(e[-+]?[0-9]{1,4})?\s?"
    r"(|[kKmMgGtT]|KiB|MiB|GiB|TiB|Q|nan|inf|/[0-9]{0,3})\s?\Z")
any_value = st.one_of(st.text(max_size=30), number_like, st.sampled_from(
    ["auto", "auto/", "auto/0", "all", "child", "root", "/", "/tmp", "/sys/fs/cgroup", "hash",
     "array", "-0", "0x10", "1_000", "\u00b2", "nan", "-inf", "1e999", "9" * 5000]))


@settings(max_examples=500)
@given(st.sampled_from(REAL_PARAMS), any_value)
@pytest.mark.slow(live=False)
def test_every_real_param_parses_or_refuses_in_one_line(named: tuple[str, Param],
                                                       text: str) -> None:
    """Each benchmark's own parser and check (page alignment, calls, cgroup targets, ...):
    any text is a value its check accepts, or one line naming the param; never a crash."""
    _, param = named
    try:
        value = param.parse(text)
    except UsageError as exc:
        message = str(exc)
        assert message.startswith(f"--param {param.name}") and "\n" not in message
        assert len(message) < 400, message  # a pasted megabyte is not echoed back whole
        return
    param.validate(value)  # what parse returned passes the check again
    assert isinstance(value, str if param.kind == "str" else int | float)


@given(st.integers(min_value=0, max_value=10**29), st.sampled_from(sorted(SCALES)))
def test_sizes_parse_exactly_however_long(n: int, suffix: str) -> None:
    """No float in between: 2^53 + 1 bytes is 2^53 + 1 bytes."""
    assert parse_bytes(f"{n}{suffix}") == n * SCALES[suffix]


@given(number_like)
@pytest.mark.slow(live=False)
def test_any_number_like_text_is_a_size_or_a_value_error(text: str) -> None:
    try:
        value = parse_bytes(text)
    except ValueError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
        return
    assert isinstance(value, int) and value >= 0


# ---- results.json damaged anywhere, at any depth --------------------------------------------


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, as the keys and indexes that lead to it."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _damaged_doc(data: st.DataObject) -> dict[str, Any]:
    """A valid results.json with one place (any depth) removed or replaced."""
    doc = store.run_to_json(make_run())
    path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values | st.sampled_from(
            [-1, 0, 1, 2**64, 10**400, 1.5, -0.0, "", "NaN", [], {}, [[]], None, True]))
    return doc


@settings(max_examples=300)
@given(st.data())
@pytest.mark.slow(live=False)
def test_loader_refuses_damage_at_any_depth_cleanly(data: st.DataObject) -> None:
    _load_text(json.dumps(_damaged_doc(data)))


@settings(max_examples=200)
@given(st.data())
@pytest.mark.slow(live=False)
def test_any_cut_of_results_json_is_refused_cleanly(data: st.DataObject) -> None:
    """A results.json cut short anywhere (a copy interrupted, a disk full) never loads half a
    run silently and never crashes: it is refused in one line."""
    text = json.dumps(store.run_to_json(make_run()), indent=1)
    cut = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    with tempfile.TemporaryDirectory() as d:
        Path(d, "results.json").write_text(text[:cut])
        try:
            store.load(Path(d))
        except UsageError as exc:
            assert "\n" not in str(exc)
            return
    raise AssertionError(f"a results.json cut at {cut} of {len(text)} characters loaded")


@settings(max_examples=150, deadline=None)
@given(st.data())
@pytest.mark.slow(live=False)
def test_what_loads_can_be_reported_and_compared(data: st.DataObject) -> None:
    """`bakeoff report` and `compare` never crash on a directory the loader accepted: what
    the loader lets through, the analysis can take (else the loader must refuse it)."""
    from bakeoff.analysis.across_runs import compare_runs
    from bakeoff.analysis.within_run import analyze

    with tempfile.TemporaryDirectory() as d:
        Path(d, "results.json").write_text(json.dumps(_damaged_doc(data)))
        try:
            run = store.load(Path(d))
        except UsageError:
            return
    analyze(run, threshold=run.settings.threshold)
    compare_runs(make_run(), run, 0.02)
