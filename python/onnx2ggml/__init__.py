"""onnx2ggml: run ONNX models on ggml through onnxruntime's Python API.

    import onnx2ggml as ort          # in place of: import onnxruntime as ort
    sess = ort.InferenceSession("model.onnx")
    outputs = sess.run(None, {"input": x})

See docs/python.md.
"""

from ._core import Error
from .session import InferenceSession, NodeArg, SessionOptions, add_rpc_servers, get_available_providers, get_device

__all__ = ["Error", "InferenceSession", "NodeArg", "SessionOptions", "add_rpc_servers", "get_available_providers",
           "get_device"]
__version__ = "0.1.0"
