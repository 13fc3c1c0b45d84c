"""Op test cases: how a case is described (shared by tests/op_tests.py and the family files in
tests/op_cases/, which add cases by calling case())."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_OPSET = 17
# Relative tolerance (max abs err / max abs ref) when a case gives none.
DEFAULT_TOL = {np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-5, np.dtype("float16"): 2e-3}

# --------------------------------------------------------------------------
# Case description


@dataclass
class In:
    """One node input.

    shape/dtype with lo/hi: seeded random data (normal(0,1) for floats when
    lo/hi are not given).  value: this exact array.  const: store as an
    initializer (weights, shape-like inputs) instead of a graph input."""

    shape: tuple = ()
    dtype: str = "float32"
    lo: float | None = None
    hi: float | None = None
    value: np.ndarray | None = None
    const: bool = False
    whole: bool = False  # round random floats to integers (makes ties)

    def describe(self) -> str:
        if self.value is not None:
            v = self.value
            text = np.array2string(v.ravel()[:6], separator=",").replace(" ", "")
            body = f"{v.dtype}{list(v.shape)}={text}" if v.ndim else f"{v.dtype}={v.item()}"
        else:
            body = f"{self.dtype}{list(self.shape)}"
            if self.lo is not None:
                body += f"~[{self.lo:g},{self.hi:g}]" + (" int-valued" if self.whole else "")
        return ("const " if self.const else "") + body


def R(*shape, dtype="float32", lo=None, hi=None, const=False, whole=False) -> In:
    """Random input of this shape (a graph input unless const)."""
    return In(tuple(shape), dtype, lo, hi, const=const, whole=whole)


def W(*shape, dtype="float32", lo=None, hi=None) -> In:
    """Random weights stored as an initializer."""
    return In(tuple(shape), dtype, lo, hi, const=True)


def K(value, dtype=None) -> In:
    """Exact constant stored as an initializer (axes, pads, scales...)."""
    arr = np.array(value, dtype=dtype) if dtype else np.array(value)
    if arr.dtype == np.float64 and dtype is None:
        arr = arr.astype(np.float32)
    return In(arr.shape, str(arr.dtype), value=arr, const=True)


def V(value, dtype=None) -> In:
    """Exact value fed as a graph input."""
    arr = K(value, dtype).value
    return In(arr.shape, str(arr.dtype), value=arr, const=False)


def I64(*values) -> In:
    """int64 1-D constant, the usual form of axes/pads/shape inputs."""
    return K(list(values), "int64")


@dataclass
class Case:
    op: str
    inputs: list  # In or None (an omitted optional input)
    attrs: dict = field(default_factory=dict)
    opset: int = DEFAULT_OPSET
    tol: float | None = None
    outputs: int = 1
    domain: str = ""  # "com.microsoft" for onnxruntime's contrib ops (opset is then the ONNX domain's)
    # Output element types (numpy names) where shape inference cannot tell them (contrib ops); default: input 0's.
    out_types: list | None = None
    id: str = ""
    xfail: str = ""  # known limitation: must fail cleanly; does not fail the run
    # Off the CPU kernels (ONNX2GGML_PORTABLE=1, or a non-CPU ONNX2GGML_DEVICE) the ggml-op path is known to differ
    # here, and why: reported as a known difference instead of a failure.
    off_cpu: str = ""
    # An equivalent model for the reference to run, for op versions neither onnxruntime nor onnx.reference has.
    ref_model: object = None

    def describe(self) -> str:
        ins = ", ".join("-" if i is None else i.describe() for i in self.inputs)
        attrs = ", ".join(f"{k}={_attr_text(v)}" for k, v in sorted(self.attrs.items()))
        tol = f" tol={self.tol:g}" if self.tol is not None else ""
        xfail = f" [xfail: {self.xfail}]" if self.xfail else ""
        return f"{self.id:<26} opset {self.opset:<2} ({ins})" + (f" {{{attrs}}}" if attrs else "") + tol + xfail


def _attr_text(value) -> str:
    if isinstance(value, onnx.TensorProto):
        arr = numpy_helper.to_array(value)
        return f"tensor {arr.dtype}{arr.tolist()}"
    return str(value)


CASES: list[Case] = []


def case(op, *inputs, opset=DEFAULT_OPSET, tol=None, outputs=1, xfail="", ref_model=None, off_cpu="", domain="",
         out_types=None, **attrs) -> None:
    """domain: a contrib op's domain ("com.microsoft"), imported at version 1 beside ai.onnx at `opset`."""
    CASES.append(Case(op, list(inputs), attrs, opset, tol, outputs, domain=domain, out_types=out_types, xfail=xfail,
                      ref_model=ref_model, off_cpu=off_cpu))


def op_name(c: Case) -> str:
    """The op as `onnx2ggml ops` lists it: "domain:Op" for contrib domains."""
    return f"{c.domain}:{c.op}" if c.domain else c.op


