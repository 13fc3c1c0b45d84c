#!/usr/bin/env python3
"""onnxruntime's AVX2 kernels on an AVX-512 machine, for an AVX2 comparison on the same CPU.

onnxruntime (and its MLAS kernels) pick AVX-512 from cpuid and XCR0 and have no switch to run their AVX2 code.
Every AVX-512 check also needs the OS to save the zmm state, which it reads from XCR0 with `xgetbv`. This copies
the installed onnxruntime package and rewrites each `xgetbv` of its native modules into `mov $7, %al; nop`: XCR0
then reads x87|SSE|AVX, so onnxruntime takes the paths it takes on a machine without AVX-512 (AVX2 and FMA are
still reported by cpuid and still usable). Nothing else in the binary changes.

Used by `scripts/bench.py --avx2`; alone:
    .venv-bench/bin/python scripts/ort_isa.py DEST     # then PYTHONPATH=DEST .venv-bench/bin/python ...
Needs objdump (binutils) to find the instructions. Linux x86-64 only.
"""
import os
import re
import shutil
import subprocess
import sys

XGETBV = b"\x0f\x01\xd0"
AVX_ONLY = b"\xb0\x07\x90"  # mov $7,%al; nop: the same length; only al's bits are tested after xgetbv


def text_sections(path):
    """(virtual address, file offset, size) of each executable section, from `objdump -h`."""
    out = subprocess.run(["objdump", "-h", path], capture_output=True, text=True, check=True).stdout
    secs, lines = [], out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and i + 1 < len(lines) and "CODE" in lines[i + 1]:
            secs.append((int(m.group(3), 16), int(m.group(4), 16), int(m.group(2), 16)))
    return secs


def xgetbv_offsets(path):
    """File offsets of the `xgetbv` instructions objdump decodes (not every 0f01d0 byte run is one)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True,
                         check=True).stdout
    addrs = [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+xgetbv\s*$", out, re.M)]
    secs = text_sections(path)
    offs = []
    for a in addrs:
        sec = next((s for s in secs if s[0] <= a < s[0] + s[2]), None)
        if sec is None:
            raise RuntimeError(f"{path}: xgetbv at {a:#x} is in no code section")
        offs.append(a - sec[0] + sec[1])
    return offs


def patch(path):
    """Rewrites every xgetbv of `path` in place; returns how many."""
    data = bytearray(open(path, "rb").read())
    offs = xgetbv_offsets(path)
    for o in offs:
        if data[o:o + 3] != XGETBV:
            raise RuntimeError(f"{path}: bytes at {o:#x} are not xgetbv")
        data[o:o + 3] = AVX_ONLY
    with open(path, "wb") as f:
        f.write(data)
    return len(offs)


def avx2_copy(dest):
    """A patched copy of the importable onnxruntime package under `dest` (reused when already made for the same
    version). Returns (dest, patched instruction count); put dest first on PYTHONPATH."""
    import onnxruntime
    src = os.path.dirname(onnxruntime.__file__)
    pkg = os.path.join(dest, "onnxruntime")
    stamp = os.path.join(dest, "PATCHED")
    if os.path.exists(stamp) and open(stamp).read().split()[0] == onnxruntime.__version__:
        return dest, int(open(stamp).read().split()[1])
    shutil.rmtree(pkg, ignore_errors=True)
    shutil.copytree(src, pkg)
    n = 0
    for root, _, files in os.walk(pkg):
        for f in files:
            if re.search(r"\.so(\.|$)", f):
                n += patch(os.path.join(root, f))
    if n == 0:
        raise RuntimeError(f"no xgetbv found in {src}: cannot hide AVX-512 from this onnxruntime")
    with open(stamp, "w") as f:
        f.write(f"{onnxruntime.__version__} {n}\n")
    return dest, n


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d, count = avx2_copy(sys.argv[1])
    print(f"{d}: onnxruntime with {count} xgetbv rewritten (no AVX-512 state)")
