"""Linear algebra: Det."""

from op_case import R, case

case("Det", R(3, 3))
case("Det", R(4, 5, 5))
case("Det", R(2, 3, 4, 4))
case("Det", R(2, 1, 3, 2, 2))  # rank 5: the batch dims fold in ggml
