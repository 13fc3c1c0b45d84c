#!/usr/bin/env python3
"""`onnx2ggml tokenize` (the C++ CLIP BPE tokenizer) against transformers' CLIPTokenizer, the one diffusers uses:
the ids of every prompt in tests/models/tokenizer/cases.json must be equal (start, ids, end, padded to 77 with
49407). open_clip's SimpleTokenizer cleans text differently (ftfy, HTML entities, final sigma); where its ids
differ from transformers' the test prints which one ours matched. Also checks the errors for a missing or
malformed merges file. The merges file is the one scripts/setup.sh fetched.

Usage: .venv/bin/python tests/tokenizer_test.py [--cli build/onnx2ggml]
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(REPO, "tests/models/tokenizer/cases.json")
VOCAB = os.path.join(REPO, ".deps/clip/bpe_simple_vocab_16e6.txt.gz")


def tokenize(cli, text, *extra):
    r = subprocess.run([cli, "tokenize", *extra, text], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    return [int(x) for x in r.stdout.split()], r.stderr.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build/onnx2ggml"))
    a = ap.parse_args()
    if not os.path.exists(VOCAB):
        print(f"FAIL: {VOCAB} missing: run scripts/setup.sh")
        return 1
    cases = json.load(open(CASES, encoding="utf-8"))["cases"]
    fails = 0
    for c in cases:
        got, err = tokenize(a.cli, c["text"], "--vocab", VOCAB, "--pad", "49407")
        ok = got == c["transformers"]
        fails += not ok
        note = ""
        oc = [x for x in c["open_clip"] if x]
        if oc != [x for x in c["transformers"] if x != 49407] + [49407]:
            note = "  (open_clip differs here; ours = transformers)" if ok else "  (open_clip differs here)"
        print(f"{'OK  ' if ok else 'FAIL'} {c['text'][:60]!r}{note}")
        if not ok:
            print(f"     want {c['transformers']}\n     got  {got} {err}")
    # open_clip pads with 0: --pad 0 gives its layout where the two references agree.
    got, _ = tokenize(a.cli, cases[0]["text"], "--vocab", VOCAB, "--pad", "0")
    ok = got == cases[0]["open_clip"]
    fails += not ok
    print(f"{'OK  ' if ok else 'FAIL'} --pad 0 matches open_clip's padding")

    with tempfile.TemporaryDirectory() as tmp:
        lines = gzip.open(VOCAB).read().decode("utf-8").split("\n")
        bad = os.path.join(tmp, "bad.txt")
        checks = [
            (lines[:5] + ["i n t"] + lines[6:60000], ": line 6: expected two tokens"),
            (lines[:7] + ["qq zz"] + lines[8:60000], ": line 8: 'qq' is neither a byte"),
            (lines[:1000], ": line 1001: file ends after 999 merges"),
        ]
        for content, want in checks:
            with open(bad, "w", encoding="utf-8") as f:
                f.write("\n".join(content))
            r = subprocess.run([a.cli, "tokenize", "--vocab", bad, "x"], capture_output=True, text=True)
            msg = r.stderr.strip()
            ok = r.returncode == 1 and bad + want in msg and msg.count("\n") == 0
            fails += not ok
            print(f"{'OK  ' if ok else 'FAIL'} malformed merges file: {msg}")
        r = subprocess.run([a.cli, "tokenize", "--vocab", os.path.join(tmp, "none.gz"), "x"], capture_output=True, text=True)
        ok = r.returncode == 1 and "none.gz: cannot open" in r.stderr
        fails += not ok
        print(f"{'OK  ' if ok else 'FAIL'} missing merges file: {r.stderr.strip()}")
    print(f"{len(cases) + 5 - fails}/{len(cases) + 5} tokenizer checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
