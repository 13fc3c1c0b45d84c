"""Run-time CPU dispatch (docs/platforms.md): the default binary reports the x86-64 level it runs at, takes a lower
one from ONNX2GGML_CPU, refuses nothing it cannot run, and passes the model tests under an emulator without
AVX-512 (QEMU's x86-64 user mode), where an AVX-512 instruction would stop it with SIGILL.

  .venv/bin/python tests/cpu_level_test.py [--cli build/onnx2ggml] [--emulator "qemu-x86_64 -cpu max"]
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(REPO, "examples", "small_cnn.onnx")
INPUT = os.path.join(REPO, "examples", "small_cnn_input.npy")


def device_line(cmd: list[str], env_extra: dict[str, str]) -> str:
    env = dict(os.environ, **env_extra)
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run(cmd + ["run", MODEL, "--input", INPUT, "--output-dir", out, "--threads", "2"],
                           env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
        return p.stderr


def level_of(stderr: str) -> int:
    m = re.search(r"CPU kernels x86-64-v(\d)", stderr)
    if not m:
        raise SystemExit(f"FAIL: no 'CPU kernels x86-64-vN' in the device line: {stderr.strip()[:300]}")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--emulator", default="", help="command line of an emulator without AVX-512")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    cli = [os.path.abspath(a.cli)]
    failures = 0

    native = level_of(device_line(cli, {"ONNX2GGML_CPU": ""}))
    print(f"this CPU: x86-64-v{native}")
    for want in range(2, native + 1):
        got = level_of(device_line(cli, {"ONNX2GGML_CPU": f"v{want}"}))
        ok = got == want
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} ONNX2GGML_CPU=v{want} runs at v{got}")
    for bad, why in (("v9", "not a level"), ("v4" if native < 4 else "", "above this CPU")):
        if not bad:
            continue
        err = device_line(cli, {"ONNX2GGML_CPU": bad})
        ok = level_of(err) == native and "ONNX2GGML_CPU=" in err
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} ONNX2GGML_CPU={bad} ({why}): a warning, and v{native}")

    if a.emulator:
        emu = shlex.split(a.emulator)
        got = level_of(device_line(emu + cli, {"ONNX2GGML_CPU": ""}))
        ok = got < 4
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} under {a.emulator}: runs at v{got} (no AVX-512 there)")
        p = subprocess.run([sys.executable, os.path.join(REPO, "tests", "model_tests.py"), "--cli", a.cli,
                            "--threads", str(a.threads)],
                           env=dict(os.environ, ONNX2GGML_CLI_WRAPPER=a.emulator, ONNX2GGML_CPU=""))
        failures += p.returncode != 0
        print(f"{'ok  ' if p.returncode == 0 else 'FAIL'} model tests under {a.emulator}")
    print("cpu level test:", "passed" if not failures else f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
