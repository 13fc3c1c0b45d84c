#!/usr/bin/env python3
"""Run the official ONNX backend node tests through the onnx2ggml CLI.

Each test directory holds model.onnx and test_data_set_*/{input,output}_*.pb.
Inputs are converted to .npy, the CLI runs the model, and its .npy outputs
are compared the way onnx.backend.test does: exact shape and dtype, then
numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7) (NaNs compare equal).

Usage:
  tests/node_tests.py                       run all tests, print a summary
  tests/node_tests.py --filter 'conv|relu'  only tests whose name matches
  tests/node_tests.py --runner ort          onnxruntime stand-in (harness check)
  tests/node_tests.py --write-docs          regenerate docs/conformance.md
  tests/node_tests.py --check               CI: fail on regressions vs the
                                            allow-list, uncategorized failures
                                            or crashes
  tests/node_tests.py --update-allowlist    rewrite the allow-list
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import metrics  # noqa: E402
import node_data  # noqa: E402
from cli_common import (  # noqa: E402
    DEFAULT_CLI,
    NPY_DTYPES,
    REPO_ROOT,
    TESTS_DIR,
    cli_prefix,
    elem_type_name,
    from_npy,
    one_line,
    run_model,
    runner_prefix,
    sanitize_name,
    to_npy,
)

NODE_DIR = node_data.node_dir()
REASONS_FILE = os.path.join(TESTS_DIR, "node_test_reasons.tsv")
ALLOWLIST_FILE = os.path.join(TESTS_DIR, "node_tests_allowlist.txt")
DOCS_FILE = os.path.join(REPO_ROOT, "docs", "conformance.md")
CATEGORIES = ("not-yet", "by-design", "ggml-limit")
BACKEND_API_MARKER = "## Through onnx's BackendTest runner"

DEFAULT_RTOL, DEFAULT_ATOL = node_data.DEFAULT_RTOL, node_data.DEFAULT_ATOL


@dataclass
class Result:
    name: str
    op: str
    passed: bool
    detail: str = ""  # why it failed, as observed
    crash: str | None = None
    host_float_nodes: int | None = None  # from --stats; None if unknown
    category: str = ""  # filled in from the reasons file for failures
    reason: str = ""
    seconds: float = 0.0


# --------------------------------------------------------------------------
# Loading a test case


def list_tests() -> list[str]:
    return sorted(
        d for d in os.listdir(NODE_DIR) if os.path.isfile(os.path.join(NODE_DIR, d, "model.onnx"))
    )


def tensor_type_problem(model: onnx.ModelProto) -> str | None:
    """Why this model's interface cannot cross the .npy boundary, or None.
    Sequences, optionals and exotic element types (float8, int4, strings...)
    have no .npy form in the CLI contract."""
    for vi in list(model.graph.input) + list(model.graph.output):
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            return f"'{vi.name}' is {kind.replace('_type', '')}-typed, not a plain tensor"
        elem = vi.type.tensor_type.elem_type
        if elem not in NPY_DTYPES:
            return f"'{vi.name}' has element type {elem_type_name(elem)} (no .npy form)"
    return None


def load_tensor(path: str) -> np.ndarray:
    with open(path, "rb") as f:
        proto = onnx.TensorProto()
        proto.ParseFromString(f.read())
    return numpy_helper.to_array(proto)


def tolerances(test_dir: str) -> tuple[float, float]:
    """Per-test overrides the loader honours (data.json), else defaults."""
    path = os.path.join(test_dir, "data.json")
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
        return data.get("rtol", DEFAULT_RTOL), data.get("atol", DEFAULT_ATOL)
    return DEFAULT_RTOL, DEFAULT_ATOL


# --------------------------------------------------------------------------
# Comparing outputs


def compare(index: int, name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None if `got` matches `want` as the backend test requires, else why not."""
    label = f"output {index} '{name}'"
    if got.shape != want.shape:
        return f"{label}: shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype == object:
        return None if np.array_equal(got, want) else f"{label}: values differ"
    if got.dtype != want.dtype:
        return f"{label}: dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind == "V":  # bfloat16 & co: compare as float32 values
        if want.dtype.name == "bfloat16":  # onnx's runner allows two bfloat16 ULPs
            rtol = max(rtol, 2**-6)
        got, want = got.astype(np.float32), want.astype(np.float32)
    if not metrics.close(want, got, rtol, atol).all():  # what assert_allclose checks, NaNs equal
        return f"{label}: {mismatch_summary(got, want, rtol, atol)}"
    return None


def mismatch_summary(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    if want.dtype == bool or want.dtype.kind not in "fiuc":
        bad = got != want
        return f"{int(bad.sum())}/{want.size} elements differ"
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = ~metrics.close(w, g, rtol, atol)
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else ()
    where = f"; first at {list(first)}: got {g[first]:.6g}, expected {w[first]:.6g}" if bad.any() else ""
    return f"{int(bad.sum())}/{want.size} elements differ, max abs err {metrics.errors(w, g).abs:.3g}{where}"


# --------------------------------------------------------------------------
# Running one test


def run_test(name: str, prefix: list[str], timeout: float, threads: int | None) -> Result:
    start = time.monotonic()
    result = _run_test(name, prefix, timeout, threads)
    result.seconds = time.monotonic() - start
    return result


def _run_test(name: str, prefix: list[str], timeout: float, threads: int | None) -> Result:
    test_dir = os.path.join(NODE_DIR, name)
    model_path = os.path.join(test_dir, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    op = main_op(name, model)
    problem = tensor_type_problem(model)
    if problem:
        return Result(name, op, False, f"not run: {problem}")
    rtol, atol = tolerances(test_dir)
    host_float = None
    with tempfile.TemporaryDirectory(prefix="o2g_node_") as tmp:
        for data_dir in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
            failure, stats = run_data_set(model, model_path, data_dir, tmp, prefix, timeout, threads, rtol, atol)
            if stats is not None:
                host_float = stats.get("host_float_nodes", host_float)
            if failure:
                res = Result(name, op, False, failure[0], crash=failure[1])
                res.host_float_nodes = host_float
                return res
    return Result(name, op, True, host_float_nodes=host_float)


def run_data_set(model, model_path, data_dir, tmp, prefix, timeout, threads, rtol, atol):
    """Returns ((detail, crash) or None, stats dict or None)."""
    set_dir = os.path.join(tmp, os.path.basename(data_dir))
    out_dir = os.path.join(set_dir, "out")
    os.makedirs(out_dir)
    # input_i.pb belongs to graph.input[i], as in the backend test runner.
    inputs = []
    for i in range(len(glob.glob(os.path.join(data_dir, "input_*.pb")))):
        vi = model.graph.input[i]
        arr = load_tensor(os.path.join(data_dir, f"input_{i}.pb"))
        path = os.path.join(set_dir, f"input_{i}.npy")
        np.save(path, to_npy(arr, vi.type.tensor_type.elem_type))
        inputs.append((vi.name, path))
    stats_path = os.path.join(set_dir, "stats.json")
    res = run_model(prefix, model_path, inputs, out_dir, stats_path, threads, timeout)
    stats = read_stats(stats_path)
    if res.timed_out:
        return (f"timeout after {timeout:g} s", None), stats
    crash = res.crash()
    if crash:
        return (f"crash: {crash}", crash), stats
    if res.returncode != 0:
        # The model path is machine-specific noise in a report; drop it.
        message = res.error_line().replace(f"{model_path}: ", "")
        return (f"exit {res.returncode}: {one_line(message, 300)}", None), stats
    for i in range(len(glob.glob(os.path.join(data_dir, "output_*.pb")))):
        vi = model.graph.output[i]
        path = os.path.join(out_dir, sanitize_name(vi.name))
        if not os.path.exists(path):
            return (f"output {i} '{vi.name}': no file {os.path.basename(path)}", None), stats
        try:
            got = from_npy(np.load(path, allow_pickle=False), vi.type.tensor_type.elem_type)
        except Exception as exc:
            return (f"output {i} '{vi.name}': unreadable .npy: {one_line(str(exc))}", None), stats
        want = load_tensor(os.path.join(data_dir, f"output_{i}.pb"))
        why = compare(i, vi.name, got, want, rtol, atol)
        if why:
            return (why, None), stats
    return None, stats


def read_stats(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------
# Which op a test belongs to (for the per-op tables in the docs)

_SCHEMA_KEYS: list[tuple[str, str]] | None = None


def schema_keys() -> list[tuple[str, str]]:
    """(lowercase name without underscores, display name), longest first."""
    global _SCHEMA_KEYS
    if _SCHEMA_KEYS is None:
        names = {(s.name, s.domain) for s in onnx.defs.get_all_schemas_with_history()}
        keys = {n.lower(): op_label(n, d) for n, d in names}
        _SCHEMA_KEYS = sorted(keys.items(), key=lambda kv: -len(kv[0]))
    return _SCHEMA_KEYS


def op_label(op_type: str, domain: str) -> str:
    return op_type if domain in ("", "ai.onnx") else f"{domain}:{op_type}"


def main_op(name: str, model: onnx.ModelProto) -> str:
    """The op a test exercises:
    1. an *_expanded* test (the op's function body): the op of its
       single-node non-expanded twin;
    2. a single-node model: that node's op;
    3. the longest ONNX op name that prefixes the test name (ignoring case
       and underscores);
    4. otherwise the op of the model's first node."""
    nodes = model.graph.node
    if "_expanded" in name:
        # test_x_expanded and test_x_expanded_ver18 are twins of test_x.
        for twin in (name.replace("_expanded", ""), name.split("_expanded")[0]):
            path = os.path.join(NODE_DIR, twin, "model.onnx")
            if os.path.exists(path):
                twin_nodes = onnx.load(path, load_external_data=False).graph.node
                if len(twin_nodes) == 1:
                    return op_label(twin_nodes[0].op_type, twin_nodes[0].domain)
    if len(nodes) == 1:
        return op_label(nodes[0].op_type, nodes[0].domain)
    key = name[len("test_"):].replace("_", "").lower()
    for op_key, label in schema_keys():
        if key.startswith(op_key):
            return label
    return op_label(nodes[0].op_type, nodes[0].domain) if nodes else "(empty graph)"


# --------------------------------------------------------------------------
# Failure categories and the allow-list


@dataclass
class Rule:
    pattern: re.Pattern
    category: str
    reason: str
    line: int


def load_rules(path: str = REASONS_FILE) -> list[Rule]:
    """Parse REGEX<TAB>CATEGORY<TAB>reason lines; '#' starts a comment."""
    rules = []
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise SystemExit(f"{path}:{lineno}: expected REGEX<TAB>CATEGORY<TAB>reason")
            regex, category, reason = parts
            if category not in CATEGORIES:
                raise SystemExit(f"{path}:{lineno}: category {category!r} not in {CATEGORIES}")
            pattern = re.compile(regex)
            # Reasons must be specific: refuse a rule that would match anything.
            if pattern.search("test_zz_no_such_op_qq"):
                raise SystemExit(f"{path}:{lineno}: {regex!r} is a catch-all; name the ops it covers")
            rules.append(Rule(pattern, category, reason, lineno))
    return rules


def categorize(results: list[Result], rules: list[Rule]) -> None:
    for res in results:
        if res.passed:
            continue
        rule = next((r for r in rules if r.pattern.search(res.name)), None)
        if rule:
            res.category, res.reason = rule.category, rule.reason
        else:
            res.category, res.reason = "uncategorized", "no matching line in tests/node_test_reasons.tsv"


def read_allowlist() -> set[str]:
    if not os.path.exists(ALLOWLIST_FILE):
        return set()
    with open(ALLOWLIST_FILE) as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def write_allowlist(names: set[str]) -> None:
    with open(ALLOWLIST_FILE, "w") as f:
        f.write("# ONNX node tests that pass; tests/node_tests.py --check fails if one regresses.\n")
        f.write("# Regenerate with: tests/node_tests.py --update-allowlist\n")
        for name in sorted(names):
            f.write(name + "\n")


# --------------------------------------------------------------------------
# docs/conformance.md


def md_cell(text: str) -> str:
    return one_line(text, 200).replace("|", "\\|")


def percent(n: int, total: int) -> str:
    return f"{100.0 * n / total:.1f}%" if total else "0.0%"


def write_docs(results: list[Result], runner_desc: str) -> None:
    total = len(results)
    passed = [r for r in results if r.passed]
    ggml_only = [r for r in passed if r.host_float_nodes == 0]
    lines = [f"node tests: {len(passed)} passed of {total} ({percent(len(passed), total)})", ""]
    lines += [
        "Generated by `tests/node_tests.py --write-docs` from the official ONNX backend",
        f"node tests (onnx {onnx.__version__}); runner: {runner_desc}.",
        "A test passes when every output matches in shape and dtype and",
        f"`numpy.testing.assert_allclose(rtol={DEFAULT_RTOL:g}, atol={DEFAULT_ATOL:g})` holds,",
        "exactly as `onnx.backend.test` checks it.",
        "",
        "## All float math in ggml",
        "",
        f"{len(ggml_only)} of the {len(passed)} passing tests ran every float op in ggml",
        "(`--stats` reported `host_float_nodes == 0`).",
    ]
    host_float = [r.name for r in passed if r.host_float_nodes]
    no_stats = [r.name for r in passed if r.host_float_nodes is None]
    if host_float:
        lines.append(f"{len(host_float)} computed some float values on the host: {', '.join(host_float)}.")
    if no_stats:
        lines.append(f"{len(no_stats)} wrote no usable `--stats` file.")
    lines.append("")
    lines += failure_summary(results)
    lines += per_op_tables(results)
    os.makedirs(os.path.dirname(DOCS_FILE), exist_ok=True)
    text = "\n".join(lines) + "\n"
    if os.path.exists(DOCS_FILE):  # the section tests/backend_api_tests.py --write-docs keeps at the end
        with open(DOCS_FILE) as f:
            old = f.read()
        if BACKEND_API_MARKER in old:
            text += "\n" + old[old.index(BACKEND_API_MARKER):]
    with open(DOCS_FILE, "w") as f:
        f.write(text)


def failure_summary(results: list[Result]) -> list[str]:
    failed = [r for r in results if not r.passed]
    by_cat = collections.Counter(r.category for r in failed)
    by_reason = collections.Counter((r.category, r.reason) for r in failed)
    lines = ["## Failures by category", "", "| category | tests |", "|---|---|"]
    for cat in CATEGORIES + ("uncategorized",):
        if by_cat[cat]:
            lines.append(f"| {cat} | {by_cat[cat]} |")
    lines += [
        "",
        "`not-yet`: could be supported, is not yet; `by-design`: out of scope for",
        "onnx2ggml (or not comparable); `ggml-limit`: blocked by what ggml can express.",
        "",
        "| category | reason | tests |",
        "|---|---|---|",
    ]
    for (cat, reason), n in sorted(by_reason.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1])):
        lines.append(f"| {cat} | {md_cell(reason)} | {n} |")
    return lines + [""]


def per_op_tables(results: list[Result]) -> list[str]:
    lines = [
        "## Results per op",
        "",
        "Each test is listed once, under the op it exercises: for an `_expanded`",
        "test (the op's function body), the op of its non-expanded twin; else the",
        "op of a single-node model; otherwise the longest ONNX op name that",
        "prefixes the test name, or the model's first node's op.",
        "",
    ]
    by_op: dict[str, list[Result]] = collections.defaultdict(list)
    for r in results:
        by_op[r.op].append(r)
    lines += ["| op | passed | tests |", "|---|---|---|"]
    for op in sorted(by_op, key=str.lower):
        rs = by_op[op]
        lines.append(f"| [{op}](#{anchor(op)}) | {sum(r.passed for r in rs)} | {len(rs)} |")
    lines.append("")
    for op in sorted(by_op, key=str.lower):
        rs = sorted(by_op[op], key=lambda r: r.name)
        lines += [f"### {op}", "", "| test | result | category | reason | detail |", "|---|---|---|---|---|"]
        for r in rs:
            if r.passed:
                lines.append(f"| {r.name} | pass | | | |")
            else:
                lines.append(f"| {r.name} | FAIL | {r.category} | {md_cell(r.reason)} | {md_cell(r.detail)} |")
        lines.append("")
    return lines


def anchor(heading: str) -> str:
    """GitHub-style anchor for a markdown heading."""
    return re.sub(r"[^a-z0-9_\- ]", "", heading.lower()).replace(" ", "-")


# --------------------------------------------------------------------------
# Driver


def run_all(names: list[str], prefix: list[str], jobs: int, timeout: float, threads, quiet: bool) -> list[Result]:
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_test, n, prefix, timeout, threads): n for n in names}
        for fut in concurrent.futures.as_completed(futures):
            try:
                res = fut.result()
            except Exception as exc:  # a harness bug must not hide other results
                name = futures[fut]
                res = Result(name, "?", False, f"harness error: {type(exc).__name__}: {one_line(str(exc))}")
            results.append(res)
            if not (quiet and res.passed):
                status = "PASS" if res.passed else ("CRASH" if res.crash else "FAIL")
                tail = "" if res.passed else f": {res.detail}"
                print(f"[{len(results)}/{len(names)}] {status} {res.name}{tail}", flush=True)
    return sorted(results, key=lambda r: r.name)


def load_results(path: str, names: set[str]) -> list[Result]:
    with open(path) as f:
        rows = json.load(f)
    return sorted((Result(**row) for row in rows if row["name"] in names), key=lambda r: r.name)


def check(results: list[Result], allow: set[str]) -> bool:
    """CI verdict; prints what it found.  Returns True when all is well."""
    ok = True
    regressed = [r for r in results if r.name in allow and not r.passed]
    if regressed:
        ok = False
        print(f"\nREGRESSIONS ({len(regressed)} allow-listed tests now fail):")
        for r in regressed:
            print(f"  {r.name}: {r.detail}")
    uncategorized = [r for r in results if not r.passed and r.category == "uncategorized"]
    if uncategorized:
        ok = False
        print(f"\nUNCATEGORIZED FAILURES ({len(uncategorized)}; add lines to tests/node_test_reasons.tsv):")
        for r in uncategorized:
            print(f"  {r.name}: {r.detail}")
    crashes = [r for r in results if r.crash]
    if crashes:
        ok = False
        print(f"\nCRASHES ({len(crashes)}; unsupported input must give a clean error):")
        for r in crashes:
            print(f"  {r.name}: {r.crash}")
    newly = [r.name for r in results if r.passed and r.name not in allow]
    if newly:
        print(f"\nNewly passing ({len(newly)}; run --update-allowlist to lock in):")
        for n in newly:
            print(f"  {n}")
    return ok


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=DEFAULT_CLI, help="onnx2ggml binary (default: build/onnx2ggml)")
    p.add_argument("--runner", choices=("cli", "ort"), default="cli",
                   help="'ort' runs models with onnxruntime through the same .npy interface")
    p.add_argument("--filter", help="only tests whose name matches this regex (re.search)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel tests (default 2)")
    p.add_argument("--threads", type=int, help="pass --threads N to the CLI")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per test run (default 60)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failing tests")
    p.add_argument("--write-docs", action="store_true", help="regenerate docs/conformance.md")
    p.add_argument("--check", action="store_true", help="CI mode: non-zero exit on regressions, "
                   "uncategorized failures or crashes")
    p.add_argument("--update-allowlist", action="store_true", help="rewrite tests/node_tests_allowlist.txt")
    p.add_argument("--json", help="also write per-test results to this JSON file")
    p.add_argument("--from-json", metavar="FILE",
                   help="do not run anything: reuse results saved with --json (to re-categorize, "
                        "rewrite docs or check after editing the reasons file)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    if args.write_docs and args.filter:
        sys.exit("--write-docs needs the full test set; drop --filter")
    if args.runner == "cli" and not args.from_json and not os.access(args.cli, os.X_OK):
        sys.exit(f"CLI not found or not executable: {args.cli} (build it, or pass --cli / --runner ort)")
    rules = load_rules()
    names = list_tests()
    if args.filter:
        names = [n for n in names if re.search(args.filter, n)]
    if not names:
        sys.exit("no tests selected")
    prefix = cli_prefix(args.cli) if args.runner == "cli" else runner_prefix(args.cli, "ort")

    start = time.monotonic()
    if args.from_json:
        results = load_results(args.from_json, set(names))
    else:
        results = run_all(names, prefix, args.jobs, args.timeout, args.threads, args.quiet)
    categorize(results, rules)
    elapsed = time.monotonic() - start

    passed = [r for r in results if r.passed]
    failed = [r for r in results if not r.passed]
    ggml_only = sum(1 for r in passed if r.host_float_nodes == 0)
    cats = collections.Counter(r.category for r in failed)
    print(f"\nfailures by category: " + (", ".join(f"{c} {n}" for c, n in sorted(cats.items())) or "none"))

    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=1)
    if args.write_docs:
        desc = f"`{os.path.relpath(args.cli, REPO_ROOT)}`" if args.runner == "cli" else "onnxruntime stand-in (tests/ort_runner.py)"
        write_docs(results, desc)
        print(f"wrote {os.path.relpath(DOCS_FILE, REPO_ROOT)}")
    allow = read_allowlist()
    ok = check(results, allow) if args.check else True
    if args.update_allowlist:
        ran = {r.name for r in results}
        write_allowlist((allow - ran) | {r.name for r in passed})
        print(f"wrote {os.path.relpath(ALLOWLIST_FILE, REPO_ROOT)}")
    print(f"\nnode tests: {len(passed)} passed of {len(results)} ({percent(len(passed), len(results))}), "
          f"{ggml_only} with all float ops in ggml, {len(failed)} failed "
          f"({sum(1 for r in results if r.crash)} crashes) in {elapsed:.0f} s")
    if args.check:
        print("check: " + ("OK" if ok else "FAILED"))
    return 0 if ok and (args.check or not failed) else 1


if __name__ == "__main__":
    sys.exit(main())
