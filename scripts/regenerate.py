#!/usr/bin/env python3
"""Rewrites every list and count derived from the op table and the test results, in order; --check verifies them.

Derived files and who writes them (this script calls each in turn):
  1. op_schema   src/ops/*.cpp rows' in=/out= counts, from the ONNX schemas     scripts/op_schema.py
  2. build       build/ and build/install rebuilt, so the steps below test the table as it now is
  3. node        tests/node_tests_allowlist.txt and docs/conformance.md        tests/node_tests.py
  4. compile     tests/compile_allowlist.txt                                   tests/compile_tests.py
  5. backend     the BackendTest section at the end of docs/conformance.md     tests/backend_api_tests.py
                 (after `pip install .` into .venv, as scripts/test.sh does)
  then the checks below. The fuzzer's op list is not a file: tests/fuzz/model_mutator.cpp asks the op table.
  Counts of node tests live only in docs/conformance.md; README.md and docs/*.md refer to it rather than repeat them.

--check runs nothing slow (a few seconds, no model or node-test run) and fails, naming the file, when
  - a row's counts or attribute types disagree with the ONNX schemas (scripts/op_schema.py --check);
  - an op of the table (src/ops/*.cpp rows) has no case in tests/op_cases or tests/op_tests.py;
  - docs/conformance.md disagrees with itself or with tests/node_tests_allowlist.txt (header, per-op table,
    per-test table, failure categories, BackendTest section);
  - tests/compile_allowlist.txt is not the node-test allow-list (the docs say every node test `run` passes compiles);
  - README.md or docs/*.md quotes a node-test count or an onnx version, on a line about node tests, other than
    docs/conformance.md's.

Usage: scripts/regenerate.py [--check] [--skip STEP[,STEP]] [-j N]
  --skip node,compile,backend   leave out the slow generators (minutes each on 2 cores: node tests took 2 min)
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
STEPS = ("op_schema", "build", "node", "compile", "backend")
CONFORMANCE = "docs/conformance.md"
NODE_ALLOW = "tests/node_tests_allowlist.txt"
COMPILE_ALLOW = "tests/compile_allowlist.txt"

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import op_schema  # noqa: E402  (the table's rows, parsed from src/ops/*.cpp)


def read(rel: str) -> str:
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def names(rel: str) -> set:
    return {ln.strip() for ln in read(rel).splitlines() if ln.strip() and not ln.startswith("#")}


# ---- generators ----

def sh(step: str, cmd: list, quiet: bool = False) -> None:
    print(f"=== {step}: {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    rc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL if quiet else None).returncode
    print(f"=== {step}: exit {rc} in {time.monotonic() - t0:.0f} s", flush=True)
    if rc:
        sys.exit(f"regenerate: step '{step}' failed (exit {rc}); later steps not run")


def generate(skip: set, jobs: int) -> None:
    j = str(jobs)
    if "op_schema" not in skip:
        sh("op_schema", [PY, "scripts/op_schema.py"])
    if "build" not in skip:
        sh("build", ["cmake", "--build", "build", "-j", j])
        sh("build", ["cmake", "--install", "build", "--prefix", os.path.join(ROOT, "build", "install")], quiet=True)
    if "node" not in skip:  # --check: an allow-listed test that now fails stops the run (and shows in the diff)
        sh("node", [PY, "tests/node_tests.py", "-j", j, "-q", "--check", "--update-allowlist", "--write-docs"])
    if "compile" not in skip:  # reads the node allow-list the step above wrote
        sh("compile", [PY, "tests/compile_tests.py", "-j", j, "--write-allowlist"])
    if "backend" not in skip:  # the package under test is the installed one: reinstall it from this tree first
        sh("backend", [PY, "-m", "pip", "install", "-q", "--no-build-isolation", ".", "-C", "build-dir=build-python"])
        sh("backend", [PY, "tests/backend_api_tests.py", "-j", j, "--write-docs"])


# ---- checks (cheap) ----

def table_ops() -> list:
    """Every op of the table as `onnx2ggml ops` names it, from the rows in src/ops/*.cpp."""
    ops = set()
    for path in glob.glob(os.path.join(ROOT, "src", "ops", "*.cpp")):
        for _, _, op, domain, _ in op_schema.rows(open(path).read()):
            if not op.startswith("onnx2ggml."):  # internal ops made by passes; models never hold them
                ops.add(f"{domain}:{op}" if domain else op)
    return sorted(ops)


def check_op_cases(problems: list) -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import op_tests  # the cases of tests/op_cases and tests/op_tests.py
    tested = op_tests.tested_ops()
    missing = [op for op in table_ops() if op not in tested]
    if missing:
        problems.append(f"tests/op_cases: no op test case for {', '.join(missing)} (src/ops table rows)")


def conformance_counts(text: str, problems: list):
    """(passed, total, onnx version) from docs/conformance.md's header, checked against its own tables."""
    m = re.search(r"^node tests: (\d+) passed of (\d+)", text, re.M)
    v = re.search(r"node tests \(onnx (\d[\w.]*)\)", text)
    if not m or not v:
        problems.append(f"{CONFORMANCE}: no 'node tests: N passed of M' header or onnx version")
        return None
    passed, total = int(m.group(1)), int(m.group(2))
    per_op = [(int(a), int(b)) for a, b in re.findall(r"^\| \[[^]]+\]\(#[^)]*\) \| (\d+) \| (\d+) \|$", text, re.M)]
    if (sum(a for a, _ in per_op), sum(b for _, b in per_op)) != (passed, total):
        problems.append(f"{CONFORMANCE}: 'Results per op' sums to {sum(a for a, _ in per_op)} of "
                        f"{sum(b for _, b in per_op)}, the header says {passed} of {total}")
    cats = re.search(r"\| category \| tests \|\n\|---\|---\|\n((?:\|.*\n)+)", text)
    failed = sum(int(n) for n in re.findall(r"\| (\d+) \|", cats.group(1))) if cats else -1
    if failed != total - passed:
        problems.append(f"{CONFORMANCE}: 'Failures by category' counts {failed}, the header {total - passed} failures")
    backend = re.search(r"^\| tests/node_tests\.py[^|]*\| (\d+) \| (\d+) \|$", text, re.M)
    if backend and (int(backend.group(1)), int(backend.group(2))) != (passed, total):
        problems.append(f"{CONFORMANCE}: the BackendTest section says the allow-list has {backend.group(1)} of "
                        f"{backend.group(2)}, the header {passed} of {total} (regenerate without --skip backend)")
    return passed, total, v.group(1)


def check_conformance(problems: list):
    text = read(CONFORMANCE)
    got = conformance_counts(text, problems)
    allow = names(NODE_ALLOW)
    listed = set(re.findall(r"^\| (test_\w+) \| pass \|", text, re.M))
    if listed != allow:
        problems.append(f"{CONFORMANCE} and {NODE_ALLOW} disagree: passing only in the doc: "
                        f"{sorted(listed - allow)[:5]}, only in the allow-list: {sorted(allow - listed)[:5]}")
    compiled = names(COMPILE_ALLOW)
    if compiled != allow:
        problems.append(f"{COMPILE_ALLOW} is not {NODE_ALLOW} (docs say every node test `run` passes compiles): "
                        f"only compiled: {sorted(compiled - allow)[:5]}, not compiled: {sorted(allow - compiled)[:5]}")
    return got


def check_quoted_counts(got, problems: list) -> None:
    """Node-test counts and onnx versions quoted outside docs/conformance.md must be its own."""
    passed, total, version = got
    files = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for rel in files:
        if rel == CONFORMANCE:
            continue
        for i, line in enumerate(read(rel).splitlines(), 1):
            if not re.search(r"node[ -]tests?\b", line, re.I):
                continue
            # a count, not a time, size or share ("600 s", "512 MB", "90%")
            for n in re.findall(r"(?<![\w.#/-])(\d{3,5})(?![\w.]\d)(?!\s*(?:(?:s|ms|min|h|[KMG]i?B|x)\b|%|×))", line):
                if int(n) not in (passed, total):
                    problems.append(f"{rel}:{i}: quotes {n} on a line about node tests; {CONFORMANCE} says "
                                    f"{passed} passed of {total} (refer to it rather than repeat the number)")
            for v in re.findall(r"\bonnx (\d+\.\d+\.\d+)", line):
                if v != version:
                    problems.append(f"{rel}:{i}: quotes onnx {v} on a line about node tests; {CONFORMANCE} is "
                                    f"from onnx {version}")


def check() -> int:
    t0 = time.monotonic()
    problems: list = []
    if subprocess.run([PY, "scripts/op_schema.py", "--check"], cwd=ROOT).returncode:
        problems.append("src/ops/*.cpp: row counts or attribute types disagree with the ONNX schemas "
                        "(scripts/op_schema.py --check above says which)")
    check_op_cases(problems)
    got = check_conformance(problems)
    if got:
        check_quoted_counts(got, problems)
    for p in problems:
        print("STALE " + p)
    print(f"regenerate --check: {'OK' if not problems else f'{len(problems)} stale'} "
          f"({len(table_ops())} ops in the table; {time.monotonic() - t0:.1f} s)"
          + ("; run scripts/regenerate.py" if problems else ""))
    return 1 if problems else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each stale file")
    ap.add_argument("--skip", default="", help=f"comma-separated steps to leave out: {','.join(STEPS)}")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args()
    if a.check:
        return check()
    skip = {s for s in a.skip.split(",") if s}
    if skip - set(STEPS):
        ap.error(f"unknown step(s) {','.join(sorted(skip - set(STEPS)))}; steps: {','.join(STEPS)}")
    generate(skip, a.jobs)
    return check()


if __name__ == "__main__":
    sys.exit(main())
