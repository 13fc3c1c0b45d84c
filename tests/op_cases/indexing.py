"""Indexing ops: GatherND, Scatter*, TensorScatter, Compress, TopK, OneHot, NonZero, Unique, CumSum, CumProd,
MaxUnpool, Col2Im."""

from op_case import I64, K, R, V, case

case("GatherND", R(2, 3, 4), K([[0, 1], [1, -1]], "int64"), opset=13)
case("GatherND", R(2, 3, 4), K([[1], [2]], "int64"), batch_dims=1, opset=13)
case("GatherND", R(3, 4, dtype="int64", lo=0, hi=99), K([[[2, 3]], [[0, 0]]], "int64"), opset=13)  # host data

case("ScatterND", R(4, 3), K([[1], [3]], "int64"), R(2, 3), opset=13)
case("ScatterND", R(2, 3, 4), K([[0, 1], [1, 2], [0, 1]], "int64"), R(3, 4), reduction="add", opset=16)
case("ScatterND", R(5, dtype="int64", lo=0, hi=9), K([[4], [-5]], "int64"), K([7, 8], "int64"), reduction="mul",
     opset=16)
case("ScatterElements", R(3, 4), K([[1, 0, 2, 2]], "int64"), R(1, 4), axis=0, opset=13)
case("ScatterElements", R(3, 4), K([[3, -1], [0, 1], [2, 2]], "int64"), R(3, 2), axis=1, reduction="max",
     opset=18)
case("ScatterElements", R(2, 3), K([[0, 0, 1]], "int64"), R(1, 3), axis=0, reduction="min", opset=18)
case("Scatter", R(3, 3), K([[1, 0, 2], [0, 2, 1]], "int64"), R(2, 3), axis=1, opset=10)
case("TensorScatter", R(2, 6, 3), R(2, 2, 3), K([1, 4], "int64"), opset=24)
case("TensorScatter", R(2, 5, 3), R(2, 3, 3), K([4, 0], "int64"), mode="circular", opset=24)
case("TensorScatter", R(3, 4, 2, 5), R(3, 4, 1, 5), axis=2, opset=24)  # no write_indices: row 0

case("Compress", R(3, 2), K([False, True, True], "bool"), axis=0, opset=11)
case("Compress", R(2, 5), K([True, False, True, True], "bool"), axis=-1, opset=11)
case("Compress", R(3, 2), K([True, False, False, True, True], "bool"), opset=11)  # flattened

case("TopK", R(3, 5), I64(2), axis=1, outputs=2, opset=11)
case("TopK", R(4, 3, 2), I64(3), axis=0, largest=0, outputs=2, opset=11)
case("TopK", R(2, 6, whole=True, lo=-3, hi=3), I64(4), outputs=2, opset=11)  # ties keep the lower index
case("TopK", R(5, 2, dtype="int64", lo=-9, hi=9), I64(2), axis=0, outputs=2, opset=11)  # host data
case("TopK", R(5, 2, dtype="int64", lo=-9, hi=9), k=2, axis=0, outputs=2, opset=1)  # k attribute, host data
case("TopK", R(3, 5), k=2, axis=1, outputs=2, opset=9)
case("TopK", R(3, 5), I64(3), outputs=2, opset=10)  # k input, no largest/sorted yet

case("OneHot", K([1, 0, -1, 2], "int64"), K(4, "int64"), K([0.0, 1.0], "float32"), axis=-1, opset=11)
case("OneHot", K([[1, 2], [0, 3]], "int64"), K([4], "int64"), K([-2, 5], "int64"), axis=0, opset=11)
case("NonZero", V([[1, 0, 3], [0, 0, 2]], "int64"), opset=13)
case("Unique", V([2, 1, 1, 3, 4, 3], "int64"), outputs=4, opset=11)
case("Unique", V([[1, 0, 0], [1, 0, 0], [2, 3, 4]], "int64"), axis=0, sorted=0, outputs=4, opset=11)

case("CumSum", R(3, 4), K(1, "int64"), opset=14)
case("CumSum", R(2, 3, 4), K(-3, "int64"), exclusive=1, reverse=1, opset=14)
case("CumSum", R(5, dtype="int64", lo=-9, hi=9), K(0, "int64"), opset=14)  # host data
case("CumProd", R(3, 4, lo=0.5, hi=1.5), K(1, "int64"), opset=26)
case("CumProd", R(2, 3, 4, lo=-2, hi=2), K(0, "int64"), exclusive=1, reverse=1, opset=26)
case("CumProd", V([[2, 3, -1], [4, 5, 6]], "int32"), K(-1, "int32"), opset=26)

case("MaxUnpool", R(1, 1, 2, 2), K([[[[5, 7], [13, 15]]]], "int64"), kernel_shape=[2, 2], strides=[2, 2], opset=11)
case("MaxUnpool", R(1, 2, 2, 2), K([[[[0, 3], [9, 14]], [[21, 18], [26, 31]]]], "int64"), kernel_shape=[2, 2],
     strides=[2, 2], opset=11)
case("MaxUnpool", R(1, 1, 3), K([[[1, 2, 5]]], "int64"), kernel_shape=[2], strides=[2], opset=11)
case("Col2Im", R(1, 4, 4), I64(3, 3), I64(2, 2), opset=18)
case("Col2Im", R(2, 6, 9), I64(4, 5), I64(1, 3), strides=[2, 1], pads=[1, 0, 1, 0], opset=18)
