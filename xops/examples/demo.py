"""The xops demo: eager spec ops, element types, and a labelled constraint error.

python -m xops.examples.demo
"""

import numpy as np

import xops as xo


def main():
    print(f"xops {xo.__version__}: every StableHLO op as xo.<name>\n")

    x = xo.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    print("x =", x)
    print("x * 2 + 1 =", x * 2 + 1)
    print("xo.exponential(x)[:, ::2] =", xo.exponential(x)[:, ::2])
    print("xo.compare(x, 3.0, 'GE') =", xo.compare(x, 3.0, "GE"))

    print("\n-- element types compute exactly as XLA does --")
    i4 = xo.tensor([7, -8, 3], "i4")
    print("i4:", i4, "+ 1 ->", i4 + 1, "(4-bit two's complement wraps)")
    bf = xo.tensor([1.0, 1.0 + 2**-8, 3.14159], "bf16")
    print("bf16:", bf, "(rounded to nearest even)")
    f8 = xo.tensor([448.0, 1.0], "f8E4M3FN")
    print("f8E4M3FN:", f8, "* 2 ->", f8 * 2, "(no inf in E4M3FN: overflow is NaN)")
    print(
        "integer divide truncates:",
        xo.divide(xo.tensor([7, -7]), xo.tensor([2, 2])),
        " x/0 ->",
        xo.divide(xo.tensor([5]), xo.tensor([0])),
    )
    print("shift by >= bit width:", xo.shift_left(xo.tensor([1], "i8"), xo.tensor([9], "i8")))
    nan_zero = xo.tensor([np.nan, -0.0, 0.0])
    print(
        "TOTALORDER -NaN/-0/+0:",
        xo.compare(nan_zero, xo.tensor([np.nan, 0.0, 0.0]), "LT", "TOTALORDER"),
    )

    print("\n-- errors name the op, the spec constraint and the actual types --")
    try:
        xo.pad(xo.tensor([[1, 2], [3, 4]]), xo.tensor(0), [1, 1, 1], [0, 0], [0, 0])
    except xo.SpecError as e:
        print("SpecError:", e)
    try:
        x + xo.tensor([1, 2, 3])
    except xo.SpecError as e:
        print("SpecError:", e)
    try:
        xo.add(x, xo.tensor([1.0, 2.0]))
    except xo.SpecError as e:
        print("SpecError:", e)


if __name__ == "__main__":
    main()
