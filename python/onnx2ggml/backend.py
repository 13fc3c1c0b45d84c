"""onnx2ggml as an official ONNX backend (onnx.backend.base.Backend): prepare, run_model, run_node,
supports_device. onnx's own test runner drives it: tests/backend_api_tests.py. Needs the onnx package."""

from __future__ import annotations

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from .session import InferenceSession, SessionOptions, _ggml_devices


def _ggml_device(device: str) -> str:
    d = Device(device)
    if d.type == DeviceType.CPU:
        return "CPU"
    return f"CUDA{int(d.device_id or 0)}"


class GgmlRep(BackendRep):
    """A prepared model: run(inputs) takes a list (in graph-input order) or a dict, returns a list of arrays."""

    def __init__(self, session: InferenceSession, input_names: list[str]):
        self.session = session
        self._input_names = input_names

    def run(self, inputs, **kwargs) -> list[np.ndarray]:
        if isinstance(inputs, dict):
            feed = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            # input i belongs to graph.input[i]; initializers listed as inputs keep their stored values
            own = {i.name for i in self.session.get_inputs()}
            feed = {n: v for n, v in zip(self._input_names, inputs) if n in own}
        return self.session.run(None, feed)


class GgmlBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device: str = "CPU", **kwargs) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> GgmlRep:
        """model: a ModelProto, serialized bytes or a file path. kwargs may carry SessionOptions attributes."""
        opts = SessionOptions()
        opts.device = _ggml_device(device)
        for key, value in kwargs.items():
            if hasattr(opts, key):
                setattr(opts, key, value)
        if isinstance(model, onnx.ModelProto):
            names = [i.name for i in model.graph.input]
            session = InferenceSession(model.SerializeToString(), opts)
        else:
            session = InferenceSession(model, opts)
            names = [i.name for i in session.get_inputs()]
        return GgmlRep(session, names)

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs) -> list[np.ndarray]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs, device: str = "CPU", outputs_info=None, **kwargs):
        """Runs one node: a model is made around it, its output types from ONNX shape inference."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        arrays = [np.asarray(x) for x in inputs]
        graph_inputs = [
            onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip(node.input, arrays) if name
        ]
        graph = onnx.helper.make_graph([node], "run_node", graph_inputs, [onnx.ValueInfoProto(name=o) for o in node.output])
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid(node.domain or "", opset)])
        inferred = onnx.shape_inference.infer_shapes(model)
        types = {v.name: v for v in inferred.graph.value_info}
        for out in model.graph.output:
            if out.name in types:
                out.CopyFrom(types[out.name])
        return cls.run_model(model, arrays, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        want = _ggml_device(device)
        return any(name == want for name, _ in _ggml_devices())


prepare = GgmlBackend.prepare
run_model = GgmlBackend.run_model
run_node = GgmlBackend.run_node
supports_device = GgmlBackend.supports_device
is_compatible = GgmlBackend.is_compatible
