"""Resampling cases beyond tests/op_tests.py's: Upsample, Resize options, GridSample, AffineGrid."""

from op_case import I64, K, R, case

x = R(1, 2, 4, 5)
case("Upsample", x, K([1, 1, 2, 3], "float32"), opset=9)
case("Upsample", x, K([1, 1, 2, 2], "float32"), mode="linear", opset=9)
case("Upsample", x, scales=[1.0, 1.0, 2.0, 1.5], opset=7)
case("Resize", x, K([1, 1, 2, 2], "float32"), mode="nearest", opset=10)
case("Resize", x, K([1, 1, 0.6, 1.3], "float32"), mode="linear", opset=10)
case("Resize", x, None, K([1.5, 0.6], "float32"), axes=[2, 3], mode="linear", opset=18)
case("Resize", x, None, None, I64(7, 8), axes=[2, 3], keep_aspect_ratio_policy="not_larger", opset=18)
case("Resize", x, None, None, I64(7, 8), axes=[2, 3], keep_aspect_ratio_policy="not_smaller", mode="linear",
     opset=18)
case("Resize", x, None, K([1, 1, 1.5, 1.7], "float32"), mode="linear",
     coordinate_transformation_mode="half_pixel_symmetric", opset=19)
case("Resize", x, None, K([1, 1, 1.5, 1.7], "float32"), mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1,
     opset=19)
case("Resize", x, K([0, 0, 0.2, 0.3, 1, 1, 0.8, 1.2], "float32"), None, I64(1, 2, 3, 4), mode="linear",
     coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0, opset=13)
case("Resize", R(2, 6), None, K([1.5, 2.0], "float32"), mode="nearest", opset=19)  # 2-D
case("Resize", R(1, 3, 8, 8), None, K([1, 1, 0.5, 0.5], "float32"), mode="linear", opset=19)
case("Resize", x, K([1, 1, 2, 1.5], "float32"), opset=10)  # 10: default nearest, fractional scale
grid = R(1, 3, 4, 2, lo=-1.2, hi=1.2)
case("GridSample", R(1, 2, 4, 5), grid, opset=16)
case("GridSample", R(1, 2, 4, 5), grid, mode="nearest", padding_mode="border", opset=16)
case("GridSample", R(1, 2, 4, 5), grid, mode="bicubic", padding_mode="reflection", align_corners=1, opset=16)
case("GridSample", R(2, 3, 5, 4), R(2, 2, 6, 2, lo=-1, hi=1), mode="linear", opset=20)
case("GridSample", R(1, 2, 3, 4, 5), R(1, 2, 3, 4, 3, lo=-1, hi=1), mode="linear", opset=20)  # 3 spatial dims
case("AffineGrid", R(2, 2, 3), I64(2, 3, 4, 5), opset=20)
case("AffineGrid", R(1, 2, 3), I64(1, 1, 3, 6), align_corners=1, opset=20)
case("AffineGrid", R(2, 3, 4), I64(2, 1, 3, 4, 5), opset=20)  # 3-D
case("AffineGrid", R(1, 3, 4), I64(1, 2, 2, 3, 2), align_corners=1, opset=20)  # 3-D
