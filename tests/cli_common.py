"""Helpers shared by the Python test scripts: how to call the CLI (or the
onnxruntime stand-in), how tensors cross the .npy boundary, and how to
recognise a crash as opposed to a clean error exit."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)
DEFAULT_CLI = os.path.join(REPO_ROOT, "build", "onnx2ggml")
ORT_RUNNER = os.path.join(TESTS_DIR, "ort_runner.py")

ERROR_PREFIX = "onnx2ggml: error:"

# Text that sanitizers print; any of these in stderr means memory/UB trouble
# even when the process managed to exit with an ordinary status.
SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
)

# ONNX element types that have a plain .npy representation.  bfloat16 has no
# numpy dtype of its own, so by contract it travels as its uint16 bit pattern.
NPY_DTYPES = {
    TensorProto.FLOAT: np.dtype("<f4"),
    TensorProto.DOUBLE: np.dtype("<f8"),
    TensorProto.FLOAT16: np.dtype("<f2"),
    TensorProto.BFLOAT16: np.dtype("<u2"),
    TensorProto.INT8: np.dtype("i1"),
    TensorProto.INT16: np.dtype("<i2"),
    TensorProto.INT32: np.dtype("<i4"),
    TensorProto.INT64: np.dtype("<i8"),
    TensorProto.UINT8: np.dtype("u1"),
    TensorProto.UINT16: np.dtype("<u2"),
    TensorProto.UINT32: np.dtype("<u4"),
    TensorProto.UINT64: np.dtype("<u8"),
    TensorProto.BOOL: np.dtype("bool"),
}
# The narrow types travel one element per byte, as ml_dtypes holds them: the float formats as uint8 bit
# patterns, the 4- and 2-bit integers as int8/uint8 values.
NARROW_FLOATS = {
    TensorProto.FLOAT8E4M3FN: "float8_e4m3fn",
    TensorProto.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    TensorProto.FLOAT8E5M2: "float8_e5m2",
    TensorProto.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    TensorProto.FLOAT8E8M0: "float8_e8m0fnu",
    TensorProto.FLOAT4E2M1: "float4_e2m1fn",
}
NARROW_INTS = {TensorProto.INT4: "int4", TensorProto.UINT4: "uint4", TensorProto.INT2: "int2", TensorProto.UINT2: "uint2"}
NPY_DTYPES.update({t: np.dtype("u1") for t in NARROW_FLOATS})
NPY_DTYPES.update({t: np.dtype("i1" if n.startswith("int") else "u1") for t, n in NARROW_INTS.items()})


def elem_type_name(elem_type: int) -> str:
    return TensorProto.DataType.Name(elem_type)


def sanitize_name(name: str) -> str:
    """Output file name the CLI uses for a graph output."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def to_npy(arr: np.ndarray, elem_type: int) -> np.ndarray:
    """Array as it must be written to a .npy file for the CLI."""
    # np.asarray keeps 0-d arrays 0-d (np.ascontiguousarray would not).
    if elem_type == TensorProto.BFLOAT16:
        return np.asarray(arr, order="C").view(np.uint16)
    if elem_type in NARROW_FLOATS:
        return np.asarray(arr, order="C").view(np.uint8)
    return np.asarray(arr, dtype=NPY_DTYPES[elem_type], order="C")


def from_npy(arr: np.ndarray, elem_type: int) -> np.ndarray:
    """Reinterpret an array read from the CLI's output as its ONNX type: bfloat16 and the narrow types
    (ml_dtypes types); every other type is already the right dtype."""
    import ml_dtypes

    if elem_type == TensorProto.BFLOAT16 and arr.dtype == np.uint16:
        return arr.view(ml_dtypes.bfloat16)
    if elem_type in NARROW_FLOATS and arr.dtype == np.uint8:
        return arr.view(getattr(ml_dtypes, NARROW_FLOATS[elem_type]))
    if elem_type in NARROW_INTS and arr.dtype == NPY_DTYPES[elem_type]:
        return arr.astype(getattr(ml_dtypes, NARROW_INTS[elem_type]))
    return arr


def cli_prefix(cli: str) -> list[str]:
    """argv prefix that runs the CLI binary: ONNX2GGML_CLI_WRAPPER (split like a shell command: "wine" for a Windows
    build, "qemu-aarch64 -L /usr/aarch64-linux-gnu" for an ARM64 one; docs/platforms.md) goes before it."""
    return shlex.split(os.environ.get("ONNX2GGML_CLI_WRAPPER", "")) + [os.path.abspath(cli)]


def runner_prefix(cli: str, runner: str) -> list[str]:
    """argv prefix for the program under test."""
    if runner == "ort":
        return [sys.executable, ORT_RUNNER]
    if runner != "cli":
        raise ValueError(f"unknown runner {runner!r}")
    return cli_prefix(cli)


@dataclass
class CliResult:
    argv: list[str]
    returncode: int | None  # None when it timed out
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def crash(self) -> str | None:
        """Why this run counts as a crash, or None.  A clean error exit is
        not a crash; a signal or sanitizer report is."""
        if self.returncode is not None and self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        if self.returncode is not None and self.returncode >= 0xC0000000:  # a Windows NTSTATUS (access violation...)
            return f"Windows exception 0x{self.returncode:08X}"
        for marker in SANITIZER_MARKERS:
            if marker in self.stderr:
                line = next(l for l in self.stderr.splitlines() if marker in l)
                return f"sanitizer: {line.strip()[:200]}"
        return None

    def error_line(self) -> str:
        """The first `onnx2ggml: error:` line with the indented lines that
        continue it (joined by '; '), else the last stderr line."""
        lines = [l for l in self.stderr.splitlines() if l.strip()]
        for k, line in enumerate(lines):
            if line.startswith(ERROR_PREFIX):
                parts = [line.strip()]
                for more in lines[k + 1:]:
                    if not more[:1].isspace():
                        break
                    parts.append(more.strip())
                return parts[0] + " " + "; ".join(parts[1:]) if len(parts) > 1 else parts[0]
        return lines[-1].strip() if lines else ""


def run_cli(prefix: list[str], args: list[str], timeout: float) -> CliResult:
    argv = prefix + args
    for attempt in range(2):
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            return CliResult(argv, None, _text(exc.stdout), _text(exc.stderr))
        except OSError as exc:  # e.g. the binary is being relinked right now
            return CliResult(argv, 127, "", f"cannot execute {argv[0]}: {exc}")
        # Under an emulator (wine, about 1 start in 2000), a failure with no output at all is the emulator not
        # starting the binary: the CLI prints a line whenever it fails. Such a start is tried once more, and said.
        silent = proc.returncode not in (0, None) and not proc.stdout and not proc.stderr
        if not (silent and attempt == 0 and os.environ.get("ONNX2GGML_CLI_WRAPPER")):
            break
        print(f"note: {' '.join(prefix)} exited {proc.returncode} with no output; run once more", file=sys.stderr)
    return CliResult(argv, proc.returncode, _text(proc.stdout), _text(proc.stderr))


def run_model(
    prefix: list[str],
    model_path: str,
    inputs: list[tuple[str, str]],
    out_dir: str,
    stats_path: str | None = None,
    threads: int | None = None,
    timeout: float = 60.0,
) -> CliResult:
    """`onnx2ggml run` with named inputs (name, npy path)."""
    args = ["run", model_path]
    for name, path in inputs:
        args += ["--input", f"{name}={path}"]
    args += ["--output-dir", out_dir]
    if stats_path:
        args += ["--stats", stats_path]
    if threads:
        args += ["--threads", str(threads)]
    return run_cli(prefix, args, timeout)


def run_arrays(cli: str, model: str, feeds: dict, out_dir: str, threads: int = 2, extra=()):
    """`onnx2ggml run` on numpy inputs (saved into out_dir) -> (CompletedProcess, {output name: array} or None)."""
    os.makedirs(out_dir, exist_ok=True)
    args = [cli, "run", model, "--output-dir", out_dir, "--threads", str(threads)] + list(extra)
    for name, arr in feeds.items():
        p = os.path.join(out_dir, "in_" + sanitize_name(name))
        np.save(p, arr)
        args += ["--input", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return r, None
    outs = {}
    for line in r.stdout.splitlines():  # "NAME: float32 [..] -> PATH"
        m = re.match(r"(.*?): \S+ \S+ -> (.*)$", line)
        if m:
            outs[m.group(1)] = np.load(m.group(2))
    return r, outs


def _text(data) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data


def one_line(text: str, limit: int = 160) -> str:
    """Collapse whitespace so a message fits in a table cell or log line."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def off_device(stats: dict, device: str) -> str | None:
    """None when every ggml node that computes ran on `device` (views and reshapes aside), per `--stats`; else why
    not. This is how tests on a GPU backend see a fallback to the CPU."""
    shares = stats.get("backends", {})
    # An RPC device's backend is named with its server: "RPC0[127.0.0.1:50052]".
    name = next((b for b in shares if b == device or b.startswith(device + "[")), None)
    if name is None:
        return f"ran on {', '.join(shares) or 'no backend'}, not {device}"
    other = [f"{s['compute_nodes']} ggml nodes computed on {b} ({s['copy_mb']:.2f} MB copied in)"
             for b, s in shares.items() if b != name and s["compute_nodes"]]
    return "; ".join(other) + f", not on {device}" if other else None


def local_twin(cmd: list[str], out_dir: str) -> list[str]:
    """An `onnx2ggml run` command line moved to the local CPU through the portable path (the ggml graph a remote
    device is sent), writing to out_dir: the run whose outputs a remote (RPC) device's must equal bit for bit."""
    out, it = [], iter(cmd)
    for a in it:
        if a in ("--device", "--rpc", "--stats", "--output-dir"):
            next(it, None)
        else:
            out.append(a)
    # Exact mode sends a remote device no flash attention (its backend's precision is not known here).
    fast = any(a == "fast" and b == "--precision" for b, a in zip(out, out[1:]))
    return (["env", "ONNX2GGML_FLASH_ATTENTION=0"] if not fast else []) + out + [
        "--portable", "--device", "CPU", "--output-dir", out_dir]


def bitwise_diff(got_dir: str, local_dir: str) -> str | None:
    """None when every .npy output in got_dir has the same bytes in local_dir; else which differ and by how much."""
    bad = []
    for f in sorted(os.listdir(got_dir)):
        if not f.endswith(".npy"):
            continue
        path = os.path.join(local_dir, f)
        if not os.path.exists(path):
            bad.append(f"{f} missing in the local run")
            continue
        a, b = np.load(os.path.join(got_dir, f)), np.load(path)
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            diff = (np.abs(a.astype(np.float64) - b.astype(np.float64)).max()
                    if a.shape == b.shape and a.dtype.kind in "fiu" else "-")
            bad.append(f"{f} differs from the local run (max abs {diff})")
    return "; ".join(bad) or None
