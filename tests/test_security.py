"""Security, with real runs: hostile text stays inert in every report, no shell ever sees user
text, --out and temp dirs are checked and private, and a user without root gets results for
what needs no privilege and a reason with a fix for the rest.

The heap sampler opening SAMPLER_OUTPUT with O_NOFOLLOW (a planted symlink leaves its target
untouched and the program's exit code unchanged) is proven in
benchmarks/heap_sampling/tests/test_heap_sampling.py: test_summary_never_follows_a_symlink
and test_python_script_runs_and_keeps_its_exit_code; it is not repeated here.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import pytest

from bakeoff.core import pids as procs
from bakeoff.declare.model import Benchmark, Variant
from browser import Browser
from conftest import FIXTURES, REPO, build_dir
from room_cases import ROOMS

ROOMS_ENV = {"BAKEOFF_BENCHMARKS_DIR": str(FIXTURES / "rooms"),
             "BAKEOFF_BUILD_DIR": str(FIXTURES / "build")}


def _load_room() -> ModuleType:
    """The hostile room's spec, for its strings: one source of truth for what is hostile."""
    spec = importlib.util.spec_from_file_location("hostile_room_spec",
                                                  FIXTURES / "rooms" / "hostile" / "spec.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOM = _load_room()
# A directory name cannot hold '/', so the run label (the --out name) takes the rest.
RUN_LABEL = "\"><img src=x onerror=alert(1)>'&amp;javascript:alert(1)"
HOST = "</script><script>alert(1)</script><img src=x onerror=alert(1)> 'q' \"dq\" &amp; |x|"
HOST_FACTS = {"hostname": f"host {HOST}", "kernel": f"kernel {HOST}",
              "cpu_model": f"cpu {HOST}", "os": "javascript:alert(1)"}
HOST_KEY = "<script>alert(1)</script>"  # a fact's name is shown too
HOST_WARNING = f"warning from a host fact: {HOST}"
BUSY = f"{HOST} (pid 1, 99% CPU)"  # a process's name is anyone's to choose


def bakeoff(*args: str, env: dict[str, str] | None = None, umask: int = -1,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bakeoff", *args], cwd=REPO, capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})}, umask=umask, timeout=timeout,
        check=False)


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


# ---- 1. hostile strings stay inert in report.html, report.md and on the terminal -----------


class HostileRun:
    def __init__(self, out: Path, run: subprocess.CompletedProcess[str],
                 report: subprocess.CompletedProcess[str]) -> None:
        self.out, self.run, self.report = out, run, report


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRun:
    """A real run of the hostile room (hostile names, descriptions, params, skip reason, trial
    stderr, run label), then its host facts replaced by hostile ones and the reports
    regenerated from results.json with `bakeoff report`."""
    out = tmp_path_factory.mktemp("hostile") / RUN_LABEL
    run = bakeoff("run", "hostile", "--profile", "quick", "--out", str(out), "--seed", "5",
                  env=ROOMS_ENV)
    # One case fails on purpose (its stderr is hostile): exit 1, the run goes on.
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    results = out / "results.json"
    data = json.loads(results.read_text())
    data["host"].update(HOST_FACTS)
    data["host"][HOST_KEY] = {"nested": f"nested {HOST}"}
    data["host"]["busy_processes"] = [BUSY]
    data["warnings"].append(HOST_WARNING)
    results.write_text(json.dumps(data))
    report = bakeoff("report", str(out), env=ROOMS_ENV)
    assert report.returncode == 0, report.stdout + report.stderr
    return HostileRun(out, run, report)


def shown_strings() -> list[str]:
    """Everything user-provided that the report must show, as written."""
    return [RUN_LABEL, ROOM.VARIANT, *ROOM.LABELS, ROOM.BENCHMARK.title, ROOM.BENCHMARK.summary,
            ROOM.BENCHMARK.variants[1].description, ROOM.SKIP_REASON, ROOM.FAIL_STDERR,
            *HOST_FACTS.values(), HOST_KEY, f"nested {HOST}", HOST_WARNING, BUSY]


# Once plotly has drawn every chart: what an injection would have left in the page. Every
# collapsed section is opened first, as a reader would, so its text counts too.
_DOM_FACTS = """(async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const charts = document.querySelectorAll('.plotly-chart');
  for (let i = 0; i < 100 && [...charts].some(c => !c.querySelector('.main-svg')); i++)
    await new Promise(r => setTimeout(r, 100));
  const urlAttrs = ['href', 'xlink:href', 'src', 'action', 'formaction', 'data', 'srcdoc'];
  const bad = [];
  for (const e of document.querySelectorAll('*'))
    for (const a of e.attributes)
      if (a.name.toLowerCase().startsWith('on') ||
          (urlAttrs.includes(a.name.toLowerCase()) && !a.value.startsWith('#')))
        bad.push(`${e.tagName} ${a.name}=${a.value.slice(0, 80)}`);
  return {
    title: document.title,
    text: document.body.innerText,
    charts: charts.length,
    drawn: [...charts].filter(c => c.querySelector('.main-svg')).length,
    scripts: [...document.scripts].map(s => ({id: s.id, type: s.type, src: s.src,
                                              alert: s.text.includes('alert(')})),
    elements: [...new Set([...document.querySelectorAll('img, iframe, object, embed, form, '
                                                        + 'base, meta[http-equiv], link')]
                          .map(e => e.tagName.toLowerCase()))],
    bad_attributes: bad,
    legend: [...new Set([...document.querySelectorAll('.legendtext')].map(e => e.textContent))],
    chart_titles: [...document.querySelectorAll('.gtitle')].map(e => e.textContent),
  };
})()"""


@pytest.fixture(scope="module")
def browsed(hostile: HostileRun, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("browser")
    control = tmp / "control.html"
    control.write_text('<!DOCTYPE html><html><body><img src=x onerror="alert(1)"></body></html>')
    browser = Browser(tmp / "profile")
    try:
        control_events = browser.open(control.as_uri())
        events = browser.open((hostile.out / "report.html").as_uri())
        dom = browser.eval(_DOM_FACTS)
    finally:
        browser.close()
    return {"control": control_events, "events": events, "dom": dom}


@pytest.mark.slow
def test_the_browser_check_sees_a_dialog_when_there_is_one(browsed: dict[str, Any]) -> None:
    """The control: the same injected <img onerror> in a plain page does open a dialog, so the
    report's silence below means something."""
    assert [e["params"]["message"] for e in browsed["control"]
            if e["method"] == "Page.javascriptDialogOpening"] == ["1"]


@pytest.mark.slow
def test_report_html_runs_nothing_injected(browsed: dict[str, Any]) -> None:
    noisy = ("Page.javascriptDialogOpening", "Runtime.consoleAPICalled",
             "Runtime.exceptionThrown", "Log.entryAdded")
    said = [(e["method"], json.dumps(e["params"])[:300]) for e in browsed["events"]
            if e["method"] in noisy]
    assert said == []  # no alert, no console message of any level, no uncaught error


@pytest.mark.slow
def test_report_html_has_no_injected_element(browsed: dict[str, Any]) -> None:
    dom = browsed["dom"]
    assert dom["elements"] == []  # no <img>, <iframe>, <form>, ... from the data
    assert dom["bad_attributes"] == []  # no on* handler, no javascript: (or any) URL
    # Exactly the report's own scripts; the data sits in the inert JSON block only.
    assert [(s["id"], s["type"], s["src"]) for s in dom["scripts"]] == [
        ("plotly-js", "", ""), ("bakeoff-figures", "application/json", ""), ("", "", "")]
    assert [s["id"] for s in dom["scripts"] if s["alert"]] == ["bakeoff-figures"]
    assert dom["charts"] >= 4 and dom["drawn"] == dom["charts"]  # the page still works


@pytest.mark.slow
def test_hostile_text_is_shown_as_text(browsed: dict[str, Any]) -> None:
    dom = browsed["dom"]
    text = dom["text"]
    missing = [s for s in shown_strings() if s not in text]
    assert missing == []  # escaped, not dropped
    assert dom["title"] == f"bakeoff report {RUN_LABEL}"
    # In the charts too: plotly reads a small HTML subset, and the names still read as written.
    assert ROOM.VARIANT in dom["legend"]
    for label in ROOM.LABELS:
        assert any(t.endswith(f"label={label}") for t in dom["chart_titles"]), label


class _Text(HTMLParser):
    """Text, elements and table shapes of an HTML fragment (report.md rendered)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []
        self.rows: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs += attrs
        if tag == "tr":
            self.rows.append(0)
        elif tag in ("td", "th"):
            self.rows[-1] += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["report.md", "details.md"])
def test_report_md_keeps_hostile_text_as_text(hostile: HostileRun, name: str) -> None:
    """Rendered as GitHub would (CommonMark, tables, raw HTML allowed), report.md and
    details.md make no element, link or extra table cell from the data, and show every
    string as written: details.md all of them, report.md those its findings and table use."""
    from markdown_it import MarkdownIt  # rich's markdown parser, installed with it

    md = (hostile.out / name).read_text()
    page = _Text()
    page.feed(MarkdownIt("commonmark", {"html": True}).enable("table").render(md))
    assert page.tags <= {"h1", "h2", "h3", "p", "ul", "li", "strong", "em", "code", "pre",
                         "table", "thead", "tbody", "tr", "th", "td"}, page.tags
    # No href, src or on* from the data: only table alignment and the fences' language.
    assert {a for a in page.attrs if a[0] != "style"} <= {("class", "language-text")}
    # Every row of a table has its header's number of cells: no '|' split a cell.
    widths = _table_widths(md)
    assert len(widths) >= (3 if name == "details.md" else 1), widths
    assert all(len(set(w)) == 1 for w in widths), widths
    text = " ".join("".join(page.text).split())
    # Neither has the list of variant descriptions; report.md leaves the benchmark's
    # summary, the failure's stderr and the host facts to details.md.
    shown = [s for s in shown_strings() if s != ROOM.BENCHMARK.variants[1].description]
    if name == "report.md":
        shown = [s for s in shown if s not in (ROOM.BENCHMARK.summary, ROOM.FAIL_STDERR,
                                                *HOST_FACTS.values(), HOST_KEY, f"nested {HOST}",
                                                BUSY)]
    missing = [s for s in shown if " ".join(s.split()) not in text]
    assert missing == []


def _table_widths(md: str) -> list[list[int]]:
    """Per markdown table, the number of cells of each row, after rendering."""
    from markdown_it import MarkdownIt

    tables = []
    for block in re.findall(r"((?:^\|.*\n)+)", md, flags=re.M):
        t = _Text()
        t.feed(MarkdownIt("commonmark").enable("table").render(block))
        tables.append(t.rows)
    return tables


@pytest.mark.slow
def test_terminal_prints_hostile_text_literally(hostile: HostileRun) -> None:
    for res in (hostile.run, hostile.report):
        out = res.stdout
        assert "Traceback" not in out + res.stderr
        assert ROOM.VARIANT in out  # '[b]' is not taken for rich markup, '|' stays
        assert "label=<script>alert(1)</script>" in out
        assert f"skipped (2): {ROOM.SKIP_REASON}" in out
    assert HOST_WARNING in hostile.report.stdout
    # The failed trial as it happened (a long line wraps at the console's width).
    assert ROOM.FAIL_STDERR in " ".join(hostile.run.stderr.split())


# ---- 2. no shell is given user text --------------------------------------------------------

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "/bin/sh", "/bin/bash", "/usr/bin/sh",
          "/usr/bin/bash", "/bin/dash"}
SHELL_CALLS = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
               "asyncio.create_subprocess_shell", "pty.spawn", "system", "popen"}
SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output"}
# Command lines that are one string but reach no shell, each named with why it is safe.
NOT_A_SHELL = {
    ("benchmarks/tracing_overhead/tracers.py", "joined argv"):
        "bpftrace -c takes the command as one string, but splits it at spaces and execve()s "
        "it itself, no shell (bpftrace 0.17 src/child.cpp); wrap() refuses any argument that "
        "holds a space, so nothing is split differently from the argv",
    # bakeoff cmd: a keyword named `shell` holding the path of the shell the user chose, not
    # subprocess's shell=True.
    ("bakeoff/cmd/definition.py", "shell=True"): "Definition(shell=...), the chosen shell's path",
    ("bakeoff/cli/cmd.py", "shell=True"): "Definition(shell=...), the chosen shell's path",
    # compare --rerun: the shell path the two cmd runs recorded (their users' choice), run
    # like --resume runs a recorded definition; the commands are printed before they run.
    ("bakeoff/cmd/rerun.py", "shell=True"): "Definition(shell=...), the recorded shell's path",
    # bakeoff cmd runs the user's own command line, typed by them for this purpose, through a
    # shell only when they ask (--shell) or it has shell syntax, as hyperfine does; it is
    # never text from a results file or another user.
    ("benchmarks/common/cmd_exec.c", '"/bin/sh"'):
        "bakeoff cmd --shell: the user's own command, as hyperfine runs it",
    # bakeoff bisect runs the user's own --build command line, typed for this, by sh in the
    # commit's checkout, as `git bisect run` runs its script; never text from a file.
    ("bakeoff/bisect/builds.py", "['sh', '-c', ...]"): "bisect --build: the user's own command",
    # bisect's --measure goes to a cmd Definition: a keyword `shell` holding a flag or the
    # shell's path, as for bakeoff cmd, not subprocess's shell=True.
    ("bakeoff/bisect/measure.py", "shell=True"): "Definition(shell=...), the chosen shell's path",
    ("bakeoff/bisect/command.py", "shell=True"): "Request(shell=...), the --shell flag",
    ("bakeoff/cli/bisect.py", "shell=True"): "Args(shell=...), the --shell flag",
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _is_text(node: ast.expr) -> bool:
    """An expression that builds one string: a literal, an f-string, '+'/'%', .format, join."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_text(node.left) or _is_text(node.right)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in ("format", "join") and _is_text(node.func.value)


def python_shell_uses(source: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            for kw in node.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                              and kw.value.value is False):
                    found.append((node.lineno, "shell=True"))
            execs_a_shell = (re.fullmatch(r"os\.(spawn|exec)\w*", name) is not None
                             and any(isinstance(a, ast.Constant) and a.value in SHELLS
                                     for a in node.args))
            if name in SHELL_CALLS or execs_a_shell:
                found.append((node.lineno, f"{name}()"))
            if name.rsplit(".", 1)[-1] in SUBPROCESS and "subprocess" in name and node.args \
                    and _is_text(node.args[0]):
                found.append((node.lineno, f"{name}() with a string command"))
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in SHELLS and any(
                    isinstance(e, ast.Constant) and e.value == "-c" for e in node.elts[1:]):
                found.append((node.lineno, f"[{first.value!r}, '-c', ...]"))
            for e in node.elts:  # an argv holding a whole command line as one element
                if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and \
                        e.func.attr == "join" and isinstance(e.func.value, ast.Constant) and \
                        e.func.value.value == " ":
                    found.append((node.lineno, "joined argv"))
    return found


_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_C_SHELL = re.compile(r"(?<![\w.>])(system|popen)\s*\(|\"(/usr)?(/bin/)?(ba|da|z|k)?sh\"")


def native_shell_uses(source: str) -> list[tuple[int, str]]:
    """C and Go: system(), popen(), or a shell's name as a string literal (exec of a shell)."""
    code = _C_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    return [(code.count("\n", 0, m.start()) + 1, m.group(0)) for m in _C_SHELL.finditer(code)]


def source_files() -> Iterator[Path]:
    """The harness's and the rooms' code; not the tests (a room's own live in its tests/),
    which start shells of their own making on purpose."""
    for top in ("bakeoff", "benchmarks"):
        for path in sorted((REPO / top).rglob("*")):
            if "tests" in path.relative_to(REPO).parts:
                continue
            if path.suffix in (".py", ".c", ".h", ".go") and path.is_file():
                yield path


@pytest.mark.slow(live=False)
def test_no_shell_is_given_user_text() -> None:
    found: list[str] = []
    named_seen: list[tuple[str, str]] = []
    for path in source_files():
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text(errors="replace")
        uses = python_shell_uses(text) if path.suffix == ".py" else native_shell_uses(text)
        for line, what in uses:
            if (rel, what) in NOT_A_SHELL:
                named_seen.append((rel, what))
            else:
                found.append(f"{rel}:{line}: {what}")
    assert found == [], "a shell could see user text; pass an argv list instead"
    # Each named exception is there exactly once: a second use needs its own review, and one
    # whose code is gone must leave the list.
    assert sorted(named_seen) == sorted(NOT_A_SHELL), named_seen


@pytest.mark.parametrize(("source", "python"), [
    ("import subprocess\nsubprocess.run('ls ' + x, shell=True)\n", True),
    ("import subprocess\nsubprocess.check_output(f'ls {x}')\n", True),
    ("import subprocess\nsubprocess.Popen(['bash', '-c', x])\n", True),
    ("import os\nos.system(x)\n", True),
    ("import os\nos.popen(x).read()\n", True),
    ("import subprocess\nsubprocess.run(['prog', '-c', ' '.join(argv)])\n", True),
    ('int main(void) { return system(cmd); }\n', False),
    ('FILE *f = popen(cmd, "r");\n', False),
    ('execl("/bin/sh", "sh", "-c", cmd, NULL);\n', False),
    ('cmd := exec.Command("sh", "-c", s)\n', False),
])
def test_the_shell_scan_finds_what_it_looks_for(source: str, python: bool) -> None:
    assert (python_shell_uses if python else native_shell_uses)(source) != []


def test_the_shell_scan_passes_argv_lists() -> None:
    assert python_shell_uses("import subprocess\nsubprocess.run(['ls', x], shell=False)\n"
                             "subprocess.run([prog, '--param', f'n={x}'])\n") == []
    assert native_shell_uses('/* system(x) */ execv(argv[0], argv); // popen(x)\n'
                             'fs->system_id = 1; my_system(2);\n') == []


# Shell metacharacters in a param value and in the --out path: each would run `touch` if
# anything handed it to a shell.
def _injections(marker: Path) -> list[str]:
    return [f"$(touch {marker})", f";touch {marker};", f"`touch {marker}`",
            f"x\ntouch {marker}", f"a|touch {marker}&&touch {marker}", "'\"$HOME\\"]


@pytest.mark.slow
def test_shell_metacharacters_reach_the_program_verbatim(tmp_path: Path) -> None:
    """A real run of the hostile room: each value arrives in the program's argv byte for byte,
    --out is created where it says, and the marker file never appears. Under umask 0 the
    run's scratch directory is still 0700, and it is gone afterwards."""
    marker = tmp_path / "PWNED"
    echo = tmp_path / "echo"
    echo.mkdir()
    scratch_root = tmp_path / "tmpdir"
    scratch_root.mkdir()
    values = _injections(marker)
    out = Path(f"{tmp_path}/out $(touch {marker});touch {marker};`touch {marker}`\nend")
    res = bakeoff("run", "hostile", "--profile", "quick", "--variant", "plain",
                  "--param", "n=1", "--param", "label=" + ",".join(values), "--trials", "1",
                  # No retakes: a contended trial measured again would repeat an argv below.
                  "--retakes", "0", "--out", str(out), "--quiet", umask=0,
                  env={**ROOMS_ENV, "HOSTILE_ECHO_DIR": str(echo), "TMPDIR": str(scratch_root)})
    assert res.returncode == 0, res.stdout + res.stderr
    assert not marker.exists()
    assert (out / "results.json").is_file()  # the path was taken as a path, newline and all
    assert (out / "report.html").is_file()
    received = [json.loads(p.read_text())["argv"] for p in echo.glob("*.json")]
    # A case's first trials also take a counted sample (Profile.counted_trials).
    received = [a[:-2] if a[-2:] == ["--counted-samples", "1"] else a for a in received]
    assert sorted(received) == sorted(
        ["--variant", "plain", "--param", "n=1", "--param", f"label={v}", "--samples", "3",
         "--warmup", "1"] for v in values)
    trials = json.loads((out / "results.json").read_text())["trials"]
    assert {t["meta"]["scratch_mode"] for t in trials} == {"0o700"}
    assert list(scratch_root.iterdir()) == []  # the scratch directory was removed


# ---- 3. paths: --out checked before anything is written; private temp dirs ----------------


@pytest.mark.parametrize("case", ["symlink to a file", "dangling symlink", "under a file",
                                  "under a symlink to a file"])
@pytest.mark.slow
def test_out_is_checked_before_anything_is_written(case: str, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "tofile").symlink_to(victim)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    out = {"symlink to a file": tmp_path / "tofile",
           "dangling symlink": tmp_path / "dangling",
           "under a file": victim / "run",
           "under a symlink to a file": tmp_path / "tofile" / "run"}[case]
    scratch_root = tmp_path / "tmpdir"
    scratch_root.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    line = one_line_error(bakeoff("run", "hostile", "--profile", "quick", "--out", str(out),
                                  env={**ROOMS_ENV, "TMPDIR": str(scratch_root)}))
    assert line.startswith(f"bakeoff: error: --out {out}: "), line
    assert victim.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # 'nowhere' was not made
    assert list(scratch_root.iterdir()) == []


@pytest.mark.slow
def test_sample_scratch_dir_is_private(tmp_path: Path) -> None:
    """`bakeoff sample` keeps the sampler's summary in its own temp dir: 0700 under umask 0."""
    if not (build_dir() / "heap_sampling" / "libbakeoff_sampler.so").exists():
        subprocess.run(["make", "-C", str(REPO / "benchmarks" / "heap_sampling")], check=True)
    probe = ("import os, stat, sys; d = os.path.dirname(os.environ['SAMPLER_OUTPUT']); "
             "print(d); print(oct(stat.S_IMODE(os.stat(d).st_mode))); sys.exit(7)")
    res = bakeoff("sample", "--", sys.executable, "-c", probe, umask=0,
                  env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 7, res.stderr  # the program's own exit status
    where, mode = res.stdout.split()
    assert mode == "0o700"
    assert Path(where).parent == tmp_path and not Path(where).exists()


# ---- 5. without root ----------------------------------------------------------------------

USER = "nobody"


def _needs(bench: Benchmark, variant: Variant) -> set[str]:
    return {*bench.requires, *variant.requires}


def _uid_processes(uid: int) -> set[int]:
    pids = set()
    for proc in psutil.process_iter(["uids"]):
        # A zombie has exited: it waits for PID 1 (slow to reap in this sandbox), holds nothing.
        if proc.info["uids"] is not None and proc.info["uids"].real == uid \
                and procs.alive(proc.pid):
            pids.add(proc.pid)
    return pids


class Unprivileged:
    """Runs bakeoff as an unprivileged user, with nothing on the machine changed.

    The repository is used in place when that user can read it. When it cannot (a clone
    under a private directory, e.g. /tmp/ciX/main with /tmp/ciX mode 0700), it is
    bind-mounted at a directory the user owns inside a private mount namespace of this one
    command: no permission is widened, nothing is copied, and the mount ends with it.
    The interpreter is the venv's when the user can run it, else this Python version's system
    interpreter with the venv's packages on PYTHONPATH (a venv made from a Python under
    /root, which no other user can execute)."""

    def __init__(self, work: Path) -> None:
        entry = pwd.getpwnam(USER)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.work = work
        self.home = work / "home"
        self.home.mkdir()
        for p in (work, self.home):
            os.chown(p, self.uid, self.gid)
        self.view = REPO
        self.bind = False
        if not self._can_read(REPO):
            self.view = work / "repo"
            self.view.mkdir()
            self.bind = True
        self.python, self.pythonpath = self._interpreter()

    def _in_view(self, path: Path) -> Path:
        return self.view / path.relative_to(REPO) if path.is_relative_to(REPO) else path

    def _argv(self, argv: list[str]) -> list[str]:
        drop = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--inh-caps=-all", "--no-new-privs", *argv]
        if not self.bind:
            return drop
        boot = ("import os, subprocess, sys; "
                "subprocess.run(['mount', '--bind', sys.argv[1], sys.argv[2]], check=True); "
                "os.execvp(sys.argv[3], sys.argv[3:])")
        return ["unshare", "--mount", "--propagation", "private", "--",
                sys.executable, "-c", boot, str(REPO), str(self.view), *drop]

    def run(self, argv: list[str], pythonpath: str = "",
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": str(self.home), "LANG": "C.UTF-8", "COLUMNS": "200",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": pythonpath}
        return subprocess.run(self._argv(argv), cwd="/", env=env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def _can_read(self, repo: Path) -> bool:
        return self.run(["test", "-r", str(repo / "bakeoff" / "cli.py"), "-a", "-x",
                         str(repo / "build" / "common" / "bakeoff-launch")]).returncode == 0

    def _interpreter(self) -> tuple[str, str]:
        site = self._in_view(Path(sysconfig.get_paths()["purelib"]))
        venv_python = self._in_view(Path(sys.prefix)) / "bin" / "python"
        system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
        tried = []
        for python, path in ((venv_python, str(self.view)),
                             (system, f"{self.view}:{site}")):
            res = self.run([str(python), "-c", "import numpy, scipy, plotly, typer, rich; "
                            "import bakeoff.cli.main"], pythonpath=path)
            if res.returncode == 0:
                return str(python), path
            tried.append(f"{python}: {res.stderr.strip()[-300:]}")
        pytest.fail(f"user {USER} can run no Python with bakeoff's packages: {tried}")

    def bakeoff(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run([self.python, "-m", "bakeoff", *args], pythonpath=self.pythonpath)


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[Unprivileged]:
    # Not pytest's tmp_path: it lies under a directory only root may enter.
    work = Path(tempfile.mkdtemp(prefix="bakeoff-security-"))
    try:
        yield Unprivileged(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.slow
def test_without_root_what_needs_no_privilege_runs(unprivileged: Unprivileged) -> None:
    user = unprivileged
    before = _uid_processes(user.uid)
    out = user.home / "run"
    res = user.bakeoff("run", "--profile", "quick", "--trials", "1", "--samples", "2",
                       "--out", str(out), "--seed", "3")
    # Skipped cases are not failures: a run where some benchmarks skipped exits 0.
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    data = json.loads((out / "results.json").read_text())
    # Every discovered room, from what it declares: a variant that needs nothing runs, one
    # that needs root is skipped saying so, and every case planned is measured.
    for name, bench in ROOMS.items():
        cases = [c for c in data["cases"] if c["benchmark"] == name]
        measured = {json.dumps(t["case"], sort_keys=True) for t in data["trials"]
                    if t["case"]["benchmark"] == name and t["status"] == "ok"}
        assert len(measured) == len(cases), name  # every planned case, not just some
        for v in bench.variants:
            planned = [c for c in cases if c["variant"] == v.name]
            skips = [s for s in data["skips"]
                     if s["case"]["benchmark"] == name and s["case"]["variant"] == v.name]
            if not _needs(bench, v):
                assert planned, f"{name} {v.name} needs nothing, yet did not run"
            if "root" in _needs(bench, v):
                assert not planned and skips, f"{name} {v.name} needs root"
                assert all("root" in s["reason"] for s in skips), skips
    # Every skip says why and what to do, unless it cannot apply anywhere.
    unfixable = sorted({s["reason"] for s in data["skips"]
                        if not s["reason"].startswith("not applicable") and "fix:" not in s["reason"]})
    assert unfixable == []
    # ... and the terminal says so too, not only the reports.
    printed = " ".join(res.stdout.split())
    for s in data["skips"]:
        if "root" in ROOMS[s["case"]["benchmark"]].requires and "root" in s["reason"]:
            assert " ".join(s["reason"].split()) in printed, s["reason"]
    assert _uid_processes(user.uid) - before == set()  # no daemon or helper left behind


@pytest.mark.slow
def test_without_root_doctor_and_list_work(unprivileged: Unprivileged) -> None:
    doctor = unprivileged.bakeoff("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "Traceback" not in doctor.stdout + doctor.stderr
    rows = _rich_rows(doctor.stdout)
    for cap in ("root", "bpf", "uprobes"):
        _name, available, _detail, fix = rows[cap]
        assert available == "no" and "root" in fix, rows[cap]
    listing = unprivileged.bakeoff("list")
    assert listing.returncode == 0, listing.stdout + listing.stderr
    assert "Traceback" not in listing.stdout + listing.stderr
    assert "bpf-map-dump" in listing.stdout


def _rich_rows(text: str) -> dict[str, list[str]]:
    """A rich table's rows by first cell, with the lines a wrapped cell continues on joined."""
    rows: dict[str, list[str]] = {}
    last: list[str] | None = None
    for line in text.splitlines():
        if line.count("│") < 2:
            continue
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells[0]:
            last = rows[cells[0]] = cells
        elif last is not None:
            last[:] = [f"{a} {b}".strip() for a, b in zip(last, cells, strict=True)]
    return rows
