"""Error metrics between a reference array and a result: the one place the tests (and scripts/) compute them.

NaN/Inf rule, the same everywhere: where the reference and the result are both NaN, or both the same
infinity, they agree (error 0 there). A NaN or an infinity in only one of them, or +inf against -inf, is
a mismatch, and any mismatch makes the errors infinite. So `rel <= tol` fails on it, and no metric is
ever NaN (a NaN would compare False with everything and could slip through a `rel > tol` check).

  errors(ref, got)             max abs error and max relative error (plus the mismatch counts)
  close(ref, got, rtol, atol)  elementwise tolerance mask, as numpy.testing.assert_allclose checks

Run `python tests/metrics.py` to self-check the rule.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class Errors(NamedTuple):
    abs: float    # max |got - ref|
    rel: float    # abs / max |ref| (see errors())
    nan_bad: int  # positions where exactly one side is NaN
    inf_bad: int  # other non-finite mismatches: an infinity against a finite value, or +inf against -inf


def errors(ref, got, zero_ref: str = "inf") -> Errors:
    """Errors of `got` against `ref` (same shape; the caller reports shape and dtype problems).

    rel = max abs err / max |ref| over the reference's finite values: one scale per array, so that
    outputs crossing zero are not judged by their smallest elements. An all-zero reference has no
    scale: zero_ref="inf" makes any error there infinite (0 stays 0); zero_ref="abs" uses the
    absolute error instead (the op tests, where e.g. Relu of negative inputs is all zeros).
    Integer and bool references must match exactly: any difference is an infinite relative error.
    Empty arrays have no error.
    """
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.dtype.kind in "iub" and got.dtype.kind in "iub":
        # int64, not float64: large integers must not round to equal.
        err = float(np.abs(got.astype(np.int64) - ref.astype(np.int64)).max()) if ref.size else 0.0
        return Errors(err, 0.0 if err == 0 else math.inf, 0, 0)
    dt = np.complex128 if "c" in (ref.dtype.kind, got.dtype.kind) else np.float64  # keep imaginary parts
    r, g = ref.astype(dt), got.astype(dt)
    nan_r, nan_g = np.isnan(r), np.isnan(g)
    nan_bad = int(np.count_nonzero(nan_r != nan_g))
    # (inf - inf is NaN, so infinities are compared by value, not by difference)
    inf_bad = int(np.count_nonzero((np.isinf(r) | np.isinf(g)) & ~(nan_r | nan_g) & (r != g)))
    if nan_bad or inf_bad:
        return Errors(math.inf, math.inf, nan_bad, inf_bad)
    fin = np.isfinite(r)  # with no mismatch, got is finite exactly here too
    if not fin.any():
        return Errors(0.0, 0.0, 0, 0)
    err = float(np.abs(g[fin] - r[fin]).max())
    scale = float(np.abs(r[fin]).max())
    if scale > 0:
        rel = err / scale
    elif zero_ref == "abs":
        rel = err
    else:
        rel = 0.0 if err == 0 else math.inf
    return Errors(err, rel, 0, 0)


def close(ref, got, rtol: float, atol: float) -> np.ndarray:
    """Elementwise |got - ref| <= atol + rtol * |ref| (numpy.isclose, the check numpy.testing.assert_allclose
    makes), with the NaN/Inf rule above: both NaN or the same infinity are close, a one-sided one is not."""
    return np.isclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


if __name__ == "__main__":  # self-check of the NaN/Inf rule
    nan, inf = math.nan, math.inf
    ref = np.array([1.0, nan, inf, -inf, -2.0])
    assert errors(ref, ref.copy()) == (0.0, 0.0, 0, 0)  # same NaN and infinities agree
    assert errors(ref, ref + [0.5, 0, 0, 0, 0]) == (0.5, 0.25, 0, 0)  # scale: max |finite ref| = 2
    for i, v, counts in ((0, nan, (1, 0)), (1, 0.0, (1, 0)), (2, 1.0, (0, 1)), (2, -inf, (0, 1)),
                         (0, inf, (0, 1)), (3, nan, (1, 0))):
        got = ref.copy()
        got[i] = v
        assert errors(ref, got) == (inf, inf, *counts), (i, v)
        assert not close(ref, got, 1e-3, 1e-7).all(), (i, v)
    assert close(ref, ref.copy(), 1e-3, 1e-7).all()
    assert errors(np.zeros(3), np.full(3, 1e-3)).rel == inf
    assert errors(np.zeros(3), np.full(3, 1e-3), zero_ref="abs").rel == 1e-3
    assert errors(np.zeros(3), np.zeros(3)).rel == 0.0
    assert errors(np.array([2**53 + 1], np.int64), np.array([2**53], np.int64)) == (1.0, inf, 0, 0)
    assert errors(np.array([1j]), np.array([-1j])).abs == 2.0
    assert errors(np.zeros(0), np.zeros(0)) == (0.0, 0.0, 0, 0)
    print("metrics: NaN/Inf rule OK")
