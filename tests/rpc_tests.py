#!/usr/bin/env python3
"""More than one machine through ggml's RPC backend (docs/backends.md), on this one: starts onnx2ggml-rpc-server
on 127.0.0.1 at a free port and checks

  - a server that is down, one that speaks another protocol version, one that hangs up at the greeting and a
    malformed HOST:PORT: each one error line naming it, no crash;
  - the model tests and the SD 1.5 small parts with --device RPC0: onnxruntime's bars, and every output equal bit
    for bit to the same graph run on the local CPU (--portable), the path a remote device is sent;
  - a compiled program (`onnx2ggml compile`) with --rpc: the same bits on RPC0 as `onnx2ggml run`;
  - exact mode sends RPC0 no flash attention (the remote backend's precision is not known), fast mode does;
  - with --python: one process placing a pipeline's parts on two devices (a text encoder on the CPU, a decoder on
    RPC0), the remote part equal bit for bit to its local run;

and stops the server at the end, whatever happened."""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PROTO_MAJOR = 7  # ggml-rpc.h's RPC_PROTO_MAJOR_VERSION of the pinned ggml (scripts/setup.sh)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, server: subprocess.Popen, seconds: float = 20) -> bool:
    end = time.time() + seconds
    while time.time() < end and server.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True  # the server sees a client that says nothing and hangs up: it waits for the next
        except OSError:
            time.sleep(0.1)
    return False


def fake_server(reply: bytes | None) -> tuple[int, threading.Thread]:
    """A listener that reads one greeting and answers `reply` (None: hangs up without a word)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        with conn:
            conn.recv(64)
            if reply is not None:
                conn.sendall(reply)
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv.getsockname()[1], t


def one_line_error(cli: str, rpc: str, must: list[str]) -> str | None:
    """None when `onnx2ggml run --rpc RPC --device RPC0` fails with one error line holding every string of `must`."""
    model = os.path.join(HERE, "models", "vae_decoder_like.onnx")
    p = subprocess.run([cli, "run", model, "--rpc", rpc, "--device", "RPC0", "--output-dir", os.devnull],
                       capture_output=True, text=True, timeout=60)
    lines = p.stderr.strip().splitlines()
    if p.returncode in (0, None) or p.returncode < 0 or p.returncode >= 128:
        return f"exit {p.returncode} (want a clean error exit): {p.stderr.strip()[-300:]}"
    if len(lines) != 1 or not lines[0].startswith("onnx2ggml: error:"):
        return f"want one error line, got {len(lines)}: {p.stderr.strip()[-300:]}"
    missing = [m for m in must if m not in lines[0]]
    return f"'{lines[0]}' does not name {missing}" if missing else None


def check_errors(cli: str) -> list[str]:
    failures = []
    down = f"127.0.0.1:{free_port()}"
    cases = [("server down", down, [down, "unreachable"]),
             ("not HOST:PORT", "localhost", ["'localhost'", "HOST:PORT"])]
    for name, rpc, must in cases:
        why = one_line_error(cli, rpc, must)
        print(f"  {'ok  ' if why is None else 'FAIL'} {name}: {why or rpc}", flush=True)
        failures += [f"{name}: {why}"] if why else []
    # Another protocol: major 6 (a newer minor than ours would be refused the same way); then a server of an older
    # protocol, whose greeting has no capability block, so it hangs up on ours.
    for name, reply, must in [("protocol 6.0.0", struct.pack("<Q", 28) + bytes([6, 0, 0, 0]) + bytes(24),
                               ["6.0.0", f"{PROTO_MAJOR}."]),
                              ("hangs up at the greeting", None, ["did not answer"])]:
        port, t = fake_server(reply)
        why = one_line_error(cli, f"127.0.0.1:{port}", [f"127.0.0.1:{port}"] + must)
        t.join(5)
        print(f"  {'ok  ' if why is None else 'FAIL'} {name}: {why or port}", flush=True)
        failures += [f"{name}: {why}"] if why else []
    return failures


def check_client_leaving(port: int, server: subprocess.Popen) -> list[str]:
    """A client that leaves while the server serves another: the server answers it into a closed connection when
    its turn comes (SIGPIPE once ended the server there) and goes on serving."""
    hello = bytes([14]) + struct.pack("<Q", 24) + bytes(24)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as first:
        first.sendall(hello)
        first.recv(64)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as second:
            second.sendall(hello)
    time.sleep(0.5)
    alive = server.poll() is None and wait_listening(port, server, 5)
    why = None if alive else f"the server ended (exit {server.poll()})"
    print(f"  {'ok  ' if alive else 'FAIL'} a client leaving while it waits: {why or 'the server goes on'}", flush=True)
    return [f"client leaving: {why}"] if why else []


def check_flash_attention(cli: str, rpc: str, threads: int) -> list[str]:
    """Exact mode uses ggml's flash attention only on devices whose kernel keeps F32 K and V (the CPU, Vulkan): an
    RPC device's remote backend is not known, so there the small UNet keeps the chunked products; fast mode uses it
    everywhere."""
    import json

    import numpy as np

    sys.path.insert(0, HERE)
    import sd15_data

    manifest = os.path.join(HERE, "models", "sd15_small", "manifest.json")
    part = next(p for p in json.load(open(manifest))["parts"] if p["name"] == "unet")
    model = os.path.join(os.path.dirname(manifest), part["file"])
    counts, fails = {}, []
    with tempfile.TemporaryDirectory(prefix="onnx2ggml_rpc_") as d:
        inputs = []
        for name, arr in sd15_data.make_inputs("sd15_small_unet", part["inputs"], part["cases"][0], 0).items():
            np.save(f"{d}/{name}.npy", arr)
            inputs += ["--input", f"{name}={d}/{name}.npy"]
        for tag, extra in [("RPC0 exact", ["--rpc", rpc, "--device", "RPC0"]),
                           ("RPC0 fast", ["--rpc", rpc, "--device", "RPC0", "--precision", "fast"]),
                           ("CPU portable exact", ["--portable", "--device", "CPU"])]:
            p = subprocess.run([cli, "run", model, *inputs, "-o", f"{d}/out", "--stats", f"{d}/s.json",
                                "--threads", str(threads), *extra], capture_output=True, text=True, timeout=600)
            if p.returncode:
                fails.append(f"flash attention, {tag}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
                continue
            counts[tag] = json.load(open(f"{d}/s.json"))["ggml_ops"].get("FLASH_ATTN_EXT", 0)
    if not fails and not (counts["RPC0 exact"] == 0 and counts["RPC0 fast"] > 0 and counts["CPU portable exact"] > 0):
        fails.append(f"flash attention nodes {counts}: want none on RPC0 exact, some in fast mode and on the CPU")
    print(f"  {'ok  ' if not fails else 'FAIL'} flash attention in the small UNet's graph: {counts or fails}",
          flush=True)
    return fails


def check_compiled(cli: str, rpc: str, threads: int) -> list[str]:
    """A program from `onnx2ggml compile`, built against build/install and the ggml install, with --rpc: the same
    bits on RPC0 as `onnx2ggml run` on RPC0."""
    import numpy as np

    sys.path.insert(0, HERE)
    from cli_common import bitwise_diff

    model = os.path.join(HERE, "models", "vae_decoder_like.onnx")
    with tempfile.TemporaryDirectory(prefix="onnx2ggml_rpc_") as d:
        x = os.path.join(d, "latent.npy")
        np.save(x, np.random.default_rng(1).standard_normal((1, 4, 12, 16)).astype(np.float32))
        prefix = f"{REPO}/build/install;{REPO}/.deps/ggml-install"
        steps = [[cli, "compile", model, "-o", f"{d}/src"],
                 ["cmake", "-S", f"{d}/src", "-B", f"{d}/b", "-DCMAKE_BUILD_TYPE=Release",
                  f"-DCMAKE_PREFIX_PATH={prefix}"],
                 ["cmake", "--build", f"{d}/b", f"-j{threads}"],
                 [f"{d}/b/vae_decoder_like", "--input", x, "--output-dir", f"{d}/prog", "--rpc", rpc,
                  "--device", "RPC0", "--threads", str(threads)],
                 [cli, "run", model, "--input", x, "--output-dir", f"{d}/run", "--rpc", rpc, "--device", "RPC0",
                  "--threads", str(threads)]]
        why = None
        for cmd in steps:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if p.returncode:
                tail = (p.stdout + p.stderr).strip()[-300:]
                why = f"{os.path.basename(cmd[0])} {cmd[1]}: exit {p.returncode}: {tail}"
                break
        why = why or bitwise_diff(f"{d}/prog", f"{d}/run")
    print(f"  {'ok  ' if why is None else 'FAIL'} compiled program --rpc: {why or 'the same bits as run on RPC0'}",
          flush=True)
    return [f"compiled program: {why}"] if why else []


def check_python_pipeline(rpc: str, threads: int) -> list[str]:
    """A text encoder on the CPU and a decoder on RPC0 in one process; the decoder equal to its local twin."""
    import numpy as np

    import onnx2ggml as ort

    def session(model, device, portable=False):
        o = ort.SessionOptions()
        o.device, o.rpc, o.portable, o.intra_op_num_threads = device, rpc, portable, threads
        return ort.InferenceSession(os.path.join(HERE, "models", model), o)

    rng = np.random.default_rng(0)
    text = session("clip_text_like.onnx", "CPU")
    ids = {text.get_inputs()[0].name: rng.integers(0, 100, size=(1, 7)).astype(np.int64)}
    text.run(None, ids)
    latent = {"latent": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)}
    remote = session("vae_decoder_like.onnx", "RPC0")
    local = session("vae_decoder_like.onnx", "CPU", portable=True)
    got = remote.run(None, latent)[0]
    # The graph RPC0 was sent: exact mode gives a remote device no flash attention (cli_common.local_twin).
    os.environ["ONNX2GGML_FLASH_ATTENTION"] = "0"
    try:
        want = local.run(None, latent)[0]
    finally:
        del os.environ["ONNX2GGML_FLASH_ATTENTION"]
    failures = []
    if not text._sess.device().startswith("CPU") or not remote._sess.device().startswith("RPC0"):
        failures.append(f"devices {text._sess.device()} and {remote._sess.device()}, not CPU and RPC0")
    if got.tobytes() != want.tobytes():
        failures.append(f"decoder on RPC0 differs from its local run (max abs {np.abs(got - want).max()})")
    print(f"  {'ok  ' if not failures else 'FAIL'} Python: text encoder on {text._sess.device()}, decoder on "
          f"{remote._sess.device()}: {'; '.join(failures) or 'decoder bit-identical to the local CPU'}", flush=True)
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--server", default=os.path.join(REPO, "build", "onnx2ggml-rpc-server"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--python", action="store_true", help="also the Python package (pip install . first)")
    ap.add_argument("--no-suites", action="store_true", help="skip the model tests and SD 1.5 parts on RPC0")
    args = ap.parse_args()
    port = free_port()
    rpc = f"127.0.0.1:{port}"
    log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"onnx2ggml-rpc-server-{port}.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([args.server, "--port", str(port), "--threads", str(args.threads)],
                                  stdout=log, stderr=subprocess.STDOUT)
    failures = []
    try:
        if not wait_listening(port, server):
            print(f"FAIL: the server did not listen on {rpc}:\n{open(log_path).read()}")
            return 1
        print(f"server on {rpc} (log {log_path})", flush=True)
        failures += check_errors(args.cli)
        failures += check_client_leaving(port, server)
        failures += check_compiled(args.cli, rpc, args.threads)
        failures += check_flash_attention(args.cli, rpc, args.threads)
        if args.python:
            failures += check_python_pipeline(rpc, args.threads)
        suites = [("model tests", [os.path.join(HERE, "model_tests.py")]),
                  ("SD 1.5 small parts", [os.path.join(HERE, "sd15_tests.py"), "--no-ort"])]
        for name, cmd in ([] if args.no_suites else suites):
            print(f"--- {name} on RPC0", flush=True)
            rc = subprocess.call([sys.executable] + cmd + ["--cli", args.cli, "--threads", str(args.threads),
                                                           "--device", "RPC0", "--rpc", rpc])
            failures += [f"{name} on RPC0 failed"] if rc else []
        if server.poll() is not None:
            failures.append(f"the server exited ({server.returncode}) during the tests; log {log_path}")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    for f in failures:
        print(f"FAIL: {f}")
    print("rpc tests: " + ("all passed" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
