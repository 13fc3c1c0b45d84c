#!/usr/bin/env python3
"""The op table's input and output counts, from the ONNX schemas.

Each row of src/ops/<family>.cpp carries `.accepts = "in=.. out=.. ..."` (see src/ops/accepts.cpp). For an
ai.onnx row this writes the counts that every schema version in the row's opset range allows (the row covers
`since` up to the next row's `since`), checks the attribute types the row names against the schema, and checks
the spec's syntax. Rows of ops without an ONNX schema (contrib, fused) keep their hand-written counts.

Usage: scripts/op_schema.py [--check]   (--check: change nothing, exit 1 when a row disagrees)
"""

from __future__ import annotations

import glob
import os
import re
import sys

import onnx
from onnx import defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNBOUNDED = 2**31 - 1
ATTR_TYPES = {"i": "INT", "f": "FLOAT", "s": "STRING", "t": "TENSOR", "g": "GRAPH", "is": "INTS", "fs": "FLOATS",
              "ss": "STRINGS"}
RULE = re.compile(r"^(in|out)(=\d+(\.\.\d*)?)$|^r(\d+|\*)(>=|<=|>|=)\d+(\.\.\d+)?$|^t\d+=(float|int|bool)$|"
                  r"^@\w+:(i|f|s|t|g|is|fs|ss)((>=|<=|>|=)-?[\d.e+-]+(\.\.-?[\d.e+-]+)?|~r\d+\+?)?$")


def rows(text: str):
    """(start, end, op, domain, since) of each `{.op = ...}` row, by brace matching."""
    for m in re.finditer(r"\{\.op = \"([^\"]+)\"", text):
        depth, i = 0, m.start()
        while True:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                break
            i += 1
        body = text[m.start():i + 1]
        dom = re.search(r"\.domain = \"([^\"]*)\"", body)
        since = re.search(r"\.since = (\d+)", body)
        since = int(since.group(1)) if since else 1
        yield m.start(), i + 1, m.group(1), dom.group(1) if dom else "", since


HISTORY: dict = {}


def schemas_in(op: str, domain: str, lo: int, hi: int) -> list:
    """Every schema version of op in force somewhere in opsets [lo, hi]."""
    if not HISTORY:
        for x in defs.get_all_schemas_with_history():
            HISTORY.setdefault((x.name, x.domain), []).append(x)
    vers = sorted(HISTORY.get((op, domain), []), key=lambda x: x.since_version)
    first = [x for x in vers if x.since_version <= lo][-1:]
    return first + [x for x in vers if lo < x.since_version <= hi]


def counts(ss: list) -> tuple[str, str]:
    def rng(lo, hi):
        return f"{lo}" if lo == hi else f"{lo}.." + ("" if hi >= UNBOUNDED else f"{hi}")
    return (rng(min(s.min_input for s in ss), max(s.max_input for s in ss)),
            rng(min(s.min_output for s in ss), max(s.max_output for s in ss)))


def process(path: str, check: bool, problems: list) -> None:
    text = open(path).read()
    all_rows = list(rows(text))
    max_opset = defs.onnx_opset_version()
    edits = []
    for start, end, op, domain, since in all_rows:
        body = text[start:end]
        spec_m = re.search(r"\.accepts = \"([^\"]*)\"", body)
        spec = spec_m.group(1).split() if spec_m else []
        where = f"{os.path.relpath(path, ROOT)}: {domain + ':' if domain else ''}{op} since {since}"
        for tok in spec:
            if not RULE.match(tok):
                problems.append(f"{where}: bad rule '{tok}'")
        if domain or op.startswith("onnx2ggml."):
            continue
        later = [s for _, _, o, d, s in all_rows if o == op and d == domain and s > since]
        ss = schemas_in(op, "", since, min(later) - 1 if later else max_opset)
        if not ss:
            continue
        for tok in spec:
            if tok.startswith("@"):
                name, ty = re.match(r"@(\w+):([a-z]+)", tok).groups()
                want = {str(s.attributes[name].type).split(".")[-1] for s in ss if name in s.attributes}
                if not want:
                    problems.append(f"{where}: attribute '{name}' is not in the schema")
                elif ATTR_TYPES[ty] not in want:
                    problems.append(f"{where}: attribute '{name}' is {'/'.join(want)} in the schema, not {ty}")
        n_in, n_out = counts(ss)
        new = [f"in={n_in}", f"out={n_out}"] + [t for t in spec if not re.match(r"(in|out)=", t)]
        if new != spec:
            if check:
                problems.append(f"{where}: counts are not the schema's (in={n_in} out={n_out})")
            edits.append((start, end, body, new, spec_m))
    for start, end, body, new, spec_m in reversed(edits):
        field = f'.accepts = "{" ".join(new)}"'
        if spec_m:
            body = body[:spec_m.start()] + field + body[spec_m.end():]
        else:
            body = re.sub(r"(\.since = \d+)", r"\1, " + field.replace("\\", "\\\\"), body, count=1)
            line_start = text.rfind("\n", 0, start) + 1
            if start - line_start + len(body.split("\n")[0]) > 120:  # the row's rest on its own line
                body = body.replace(field + ", ", field + ",\n" + " " * (start - line_start + 1), 1)
        text = text[:start] + body + text[end:]
    if edits and not check:
        open(path, "w").write(text)


def main() -> int:
    check = "--check" in sys.argv[1:]
    problems: list[str] = []
    for path in sorted(glob.glob(os.path.join(ROOT, "src/ops/*.cpp"))):
        process(path, check, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems and check:
        print(f"op_schema: {len(problems)} rows disagree with the ONNX {onnx.__version__} schemas; run "
              "scripts/op_schema.py to rewrite the counts", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
