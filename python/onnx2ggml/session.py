"""InferenceSession and SessionOptions with onnxruntime's Python API, on onnx2ggml's C++ runtime."""

from __future__ import annotations

import functools
import os
import re

import numpy as np

from . import _core

try:  # bfloat16 and float8 as numpy dtypes, where installed (onnx depends on it); else raw bit patterns
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover
    _ml = None

# ONNX element type code -> (onnxruntime type name, numpy dtype or None)
_TYPES = {
    1: ("float", np.float32), 2: ("uint8", np.uint8), 3: ("int8", np.int8), 4: ("uint16", np.uint16),
    5: ("int16", np.int16), 6: ("int32", np.int32), 7: ("int64", np.int64), 8: ("string", None),
    9: ("bool", np.bool_), 10: ("float16", np.float16), 11: ("double", np.float64), 12: ("uint32", np.uint32),
    13: ("uint64", np.uint64), 14: ("complex64", None), 15: ("complex128", None), 16: ("bfloat16", None),
    17: ("float8e4m3fn", None), 18: ("float8e4m3fnuz", None), 19: ("float8e5m2", None), 20: ("float8e5m2fnuz", None),
    21: ("uint4", None), 22: ("int4", None), 23: ("float4e2m1", None), 24: ("float8e8m0", None), 25: ("uint2", None),
    26: ("int2", None),
}
# One element per byte, as ml_dtypes holds them and the runtime does: the float formats' bit patterns, the
# 4- and 2-bit integers' values.
_ML_NAMES = {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz",
             21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}
_CODE_OF_NUMPY = {np.dtype(dt): code for code, (_, dt) in _TYPES.items() if dt is not None}
_CODE_OF_NUMPY.update({name: code for code, name in _ML_NAMES.items()})


def _numpy_dtype(code: int) -> np.dtype:
    """What an output of this type comes back as; bfloat16/float8 as ml_dtypes, or bit patterns without it."""
    if code in _ML_NAMES:
        if _ml is not None:
            return np.dtype(getattr(_ml, _ML_NAMES[code]))
        return np.dtype(np.uint16 if code == 16 else np.uint8)
    dt = _TYPES.get(code, (None, None))[1]
    if dt is None:
        raise _core.Error(f"output type {_TYPES.get(code, (str(code),))[0]} has no numpy form")
    return np.dtype(dt)


def _input_code(a: np.ndarray, want: int) -> int:
    code = _CODE_OF_NUMPY.get(a.dtype.name if a.dtype.name in _CODE_OF_NUMPY else a.dtype)
    if code is None:
        raise _core.Error(f"input type {a.dtype} is not supported")
    if want in _ML_NAMES and a.dtype.itemsize == (2 if want == 16 else 1) and a.dtype.kind in "ui":
        return want  # bit patterns (or 4/2-bit int values) of a narrow input, as the CLI's .npy files carry them
    return code


class NodeArg:
    """A graph input or output: name, shape (ints, symbolic dims as strings, None where unnamed) and type."""

    def __init__(self, name: str, code: int, dims: list, has_shape: bool, is_tensor: bool):
        self.name = name
        self.shape = list(dims) if has_shape else None
        elem = _TYPES.get(code, ("undefined", None))[0]
        self.type = f"tensor({elem})" if is_tensor else f"seq(tensor({elem}))"
        self._code = code

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class SessionOptions:
    """Options of a session, onnxruntime's names first, then onnx2ggml's own.

    intra_op_num_threads: CPU threads (0: all cores). inter_op_num_threads, graph_optimization_level,
    execution_mode and other onnxruntime attributes are accepted and ignored (our graph passes always run).
    log_severity_level: below 2 prints the device chosen when the session opens.
    device: a ggml device name ("CPU", "CUDA0", "Vulkan0"); empty: the `providers` argument, else the first GPU,
    else the CPU. Default from $ONNX2GGML_DEVICE.
    rpc: ggml RPC servers, "HOST:PORT[,HOST:PORT...]", whose devices (RPC0, RPC1, ...) the session may then name as
    its device (see add_rpc_servers). Default from $ONNX2GGML_RPC.
    weights: storage of constant MatMul/Gemm and convolution weights: "f32" (exact), "f16", "bf16" or "q8_0"; "" (the
        default): f32, but f16 with precision "fast" off the CPU.
    precision: "exact" (f32 everywhere) or "fast" (backends may round to f16). Default from $ONNX2GGML_PRECISION.
    portable: ggml-op compositions instead of our CPU kernels (the path other backends take).
    lora: LoRA .safetensors files merged into the weights at load: paths, "FILE:SCALE" strings or (path, scale).
    embeddings: textual-inversion files whose vectors a CLIP text encoder's token table gains at load, in order (ids
    from its vocabulary size on, as diffusers' load_textual_inversion gives them): paths, "FILE:TOKEN" strings or
    (path, token); the token defaults to the file name. embedding_set: "clip_l" or "clip_g", the set of an SDXL file
    used where both fit the encoder's width.
    max_memory: bytes a graph's compute buffer plus host tensors may take (SessionOptions::max_memory); a larger
    graph is refused before anything is allocated, naming its largest tensor. None or 0: the machine's memory.
    progress: a progress line on stderr while a model of 1 GB or more reads and prepares its weights, even when
    stderr is not a terminal (on a terminal it is shown anyway).
    vae_tiling: run a fully-convolutional image model (a VAE decoder or encoder, an upscaler) in overlapping tiles of
    its 4-D input that share one graph, blended linearly over the overlap, so memory is one tile's (onnx2ggml/tiling.h).
    tile_size: the tiles' side in input elements (latents for a VAE decoder; 0: 64 with vae_tiling, else no tiling);
    tile_overlap: their overlap (None: tile_size / 4).
    device_memory: bytes the session may keep on a GPU (SessionOptions::device_memory): weights that do not fit beside
    the compute buffer stay in host memory and are copied in as they are used, and a graph whose compute buffer alone
    does not fit runs in segments; stats() reports device_weight_bytes, host_weight_bytes, copied_weight_bytes,
    segments and carried_bytes. None or 0: no cap. Refused on the CPU device.
    """

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = None
        self.log_severity_level = 2
        self.device = os.environ.get("ONNX2GGML_DEVICE", "")
        self.rpc = os.environ.get("ONNX2GGML_RPC", "")
        self.weights = ""
        self.precision = os.environ.get("ONNX2GGML_PRECISION", "exact")
        self.portable = os.environ.get("ONNX2GGML_PORTABLE") == "1"
        self.lora = []
        self.embeddings = []
        self.embedding_set = ""
        self.max_memory = None
        self.device_memory = None
        self.progress = False
        self.vae_tiling = False
        self.tile_size = 0
        self.tile_overlap = None
        self._config = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        return self._config[key]


def _tiling(opts) -> tuple[int, int]:
    """(tile size, overlap) for the C++ session: (0, -1) untiled; overlap -1 is a quarter of the size."""
    size = int(getattr(opts, "tile_size", 0) or 0)
    if getattr(opts, "vae_tiling", False) and size == 0:
        size = 64  # onnx2ggml::kVaeTileSize
    overlap = getattr(opts, "tile_overlap", None)
    return size, -1 if overlap is None else int(overlap)


def _lora_list(lora) -> list[tuple[str, float]]:
    out = []
    for item in lora or []:
        if isinstance(item, (tuple, list)):
            out.append((os.fspath(item[0]), float(item[1])))
            continue
        item = os.fspath(item)
        path, _, scale = item.rpartition(":")
        if path and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", scale):
            out.append((path, float(scale)))
        else:
            out.append((item, 1.0))
    return out


def _embedding_list(embeddings) -> list[tuple[str, str]]:
    out = []
    for item in embeddings or []:
        if isinstance(item, (tuple, list)):
            out.append((os.fspath(item[0]), str(item[1] or "")))
            continue
        item = os.fspath(item)
        path, _, token = item.rpartition(":")
        # "C:\x.pt" and "dir:a/x.pt" keep their colon: a token holds no path separator (as the CLI reads it).
        if len(path) > 1 and token and not re.search(r"[/\\]", token):
            out.append((path, token))
        else:
            out.append((item, ""))
    return out


@functools.lru_cache(maxsize=None)
def _ggml_devices() -> tuple[tuple[str, str], ...]:
    return tuple(_core.devices())


def add_rpc_servers(servers: str) -> None:
    """Adds the devices of ggml RPC servers, "HOST:PORT[,HOST:PORT...]", as RPC0, RPC1, ... (once per server and
    process); an unreachable server, or one of another protocol version, raises onnx2ggml.Error naming it."""
    if servers:
        _core.add_rpc_servers(servers)
        _ggml_devices.cache_clear()


def _device_of_provider(provider) -> str:
    """ggml device for an onnxruntime provider name (or a ggml device name given as a provider)."""
    name, options = (provider if isinstance(provider, (tuple, list)) else (provider, {}))
    if name == "CPUExecutionProvider":
        return "CPU"
    if name == "CUDAExecutionProvider":
        return f"CUDA{int((options or {}).get('device_id', 0))}"
    for dev, _ in _ggml_devices():
        if dev.lower() == str(name).lower():
            return dev
    raise _core.Error(f"unknown provider '{name}'; available: {', '.join(get_available_providers())}")


def _provider_of_device(dev: str) -> str:
    if dev == "CPU":
        return "CPUExecutionProvider"
    if re.fullmatch(r"CUDA\d+", dev):
        return "CUDAExecutionProvider"
    return dev


def get_available_providers() -> list[str]:
    """onnxruntime-style names of the ggml devices in this build (GPUs first, the CPU last)."""
    devs = _ggml_devices()
    names = [_provider_of_device(d) for d, kind in devs if kind == "gpu"]
    names += [_provider_of_device(d) for d, kind in devs if kind == "cpu"]
    return list(dict.fromkeys(names))


def get_device() -> str:
    """"GPU" where ggml has a GPU device, else "CPU" (as onnxruntime.get_device())."""
    return "GPU" if any(kind == "gpu" for _, kind in _ggml_devices()) else "CPU"


class InferenceSession:
    """onnxruntime.InferenceSession on ggml: InferenceSession(path_or_bytes, sess_options=None, providers=None)."""

    def __init__(self, path_or_bytes, sess_options: SessionOptions | None = None, providers=None,
                 provider_options=None, **kwargs):
        opts = sess_options or SessionOptions()
        add_rpc_servers(getattr(opts, "rpc", ""))
        device = opts.device
        if not device and providers:
            first = providers[0]
            if provider_options and not isinstance(first, (tuple, list)):
                first = (first, provider_options[0])
            device = _device_of_provider(first)
        model = path_or_bytes if isinstance(path_or_bytes, bytes) else os.fspath(path_or_bytes)
        self._options = opts
        self._sess = _core.Session(model, int(opts.intra_op_num_threads or 0), device, opts.weights, opts.precision,
                                   bool(opts.portable), _lora_list(opts.lora), opts.log_severity_level >= 2,
                                   int(opts.max_memory or 0), bool(getattr(opts, "progress", False)),
                                   _embedding_list(getattr(opts, "embeddings", [])),
                                   str(getattr(opts, "embedding_set", "") or ""), *_tiling(opts),
                                   int(getattr(opts, "device_memory", None) or 0))
        self._inputs = [NodeArg(*i) for i in self._sess.inputs()]
        self._outputs = [NodeArg(*o) for o in self._sess.outputs()]
        for kind, args in (("input", self._inputs), ("output", self._outputs)):
            for a in args:
                if not a.type.startswith("tensor("):
                    raise _core.Error(f"{kind} '{a.name}' is not a tensor: only tensors cross the Python API "
                                      "(sequences and optionals run inside a graph)")
        self._model_path = None if isinstance(model, bytes) else model

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_providers(self) -> list[str]:
        """The device used, as onnxruntime names it ("CPUExecutionProvider", "CUDAExecutionProvider"; other ggml
        devices by their ggml name), then the CPU, which takes what the device cannot run."""
        dev = self._sess.device().split(" ")[0]
        names = [_provider_of_device(dev)]
        return names if dev == "CPU" else names + ["CPUExecutionProvider"]

    def get_provider_options(self) -> dict:
        return {p: {} for p in self.get_providers()}

    def get_session_options(self) -> SessionOptions:
        return self._options

    @property
    def device(self) -> str:
        """The ggml device, as printed when the session opens ("CPU (...)")."""
        return self._sess.device()

    def stats(self) -> dict:
        """The last run, as the CLI's `--stats` reports it: nodes on ggml and on the host, ggml ops, graph build and
        compute times, memory, and the weight bytes transformed for this run's graph."""
        return self._sess.stats()

    def run(self, output_names, input_feed: dict, run_options=None) -> list[np.ndarray]:
        """Runs the model; returns the outputs named (all when output_names is None or empty) as numpy arrays."""
        want = {i.name: i._code for i in self._inputs}
        feeds = []
        for name, value in input_feed.items():
            a = np.asarray(value, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
            code = _input_code(a, want.get(name, 0))
            feeds.append((name, code, list(a.shape), a.reshape(-1).view(np.uint8)))
        results = self._sess.run(feeds)  # the GIL is released while the graph runs
        by_name = {}
        for out, (code, shape, data) in zip(self._outputs, results):
            by_name[out.name] = data.view(_numpy_dtype(code)).reshape(shape)
        if not output_names:
            return [by_name[o.name] for o in self._outputs]
        missing = [n for n in output_names if n not in by_name]
        if missing:
            raise _core.Error(f"invalid output name '{missing[0]}'; the model's outputs: "
                              + ", ".join(o.name for o in self._outputs))
        return [by_name[n] for n in output_names]
