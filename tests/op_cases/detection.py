"""Detection: NonMaxSuppression (host), RoiAlign."""

import numpy as np

from op_case import K, R, V, case

i64 = "int64"
# Boxes as (y1, x1, y2, x2) corners, some overlapping; center_point_box=1 takes (x, y, w, h).
_boxes = np.array([[[0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [0.0, -0.1, 1.0, 0.9], [0.0, 10.0, 1.0, 11.0],
                    [1.0, 10.1, 0.0, 11.1], [0.0, 100.0, 1.0, 101.0]]], np.float32)
_scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.1, 0.8, 0.2, 0.4, 0.7, 0.9]]], np.float32)
case("NonMaxSuppression", V(_boxes), V(_scores), K([3], i64), K([0.5]), K([0.0]), opset=11)
case("NonMaxSuppression", V(_boxes), V(_scores), K([10], i64), K([0.3]), K([0.35]), opset=11)
case("NonMaxSuppression", R(2, 8, 4, lo=0.5, hi=3.0), R(2, 3, 8, lo=0.0, hi=1.0), K([4], i64), K([0.2]),
     center_point_box=1, opset=11)
case("NonMaxSuppression", V(_boxes), V(_scores), K([0], i64), opset=11)  # nothing selected: [0, 3]

# RoiAlign: avg and max, both coordinate modes, adaptive and fixed sampling, two images.
_rois = np.array([[0.0, 0.0, 4.0, 4.0], [1.2, 0.7, 6.5, 5.1], [2.0, 3.0, 7.9, 7.5]], np.float32)
case("RoiAlign", R(2, 3, 8, 8), K(_rois), K([0, 1, 1], i64), output_height=3, output_width=2, sampling_ratio=2,
     opset=16)
case("RoiAlign", R(1, 2, 10, 9), K(_rois), K([0, 0, 0], i64), output_height=2, output_width=3, spatial_scale=0.5,
     opset=16)
case("RoiAlign", R(2, 3, 8, 8), K(_rois), K([1, 0, 1], i64), output_height=2, output_width=2, mode="max",
     sampling_ratio=2, opset=16)
case("RoiAlign", R(1, 2, 8, 8), K(_rois), K([0, 0, 0], i64), output_height=3, output_width=3,
     coordinate_transformation_mode="output_half_pixel", opset=16)
case("RoiAlign", R(1, 2, 8, 8), K(_rois), K([0, 0, 0], i64), output_height=2, output_width=2, opset=10)
case("RoiAlign", R(1, 2, 8, 8), K(_rois[:2]), K([0, 0], i64), output_height=2, output_width=2, opset=16)  # defaults
