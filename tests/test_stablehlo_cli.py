"""``python -m xops.stablehlo`` as a tool, and the same errors from the Python API.

Exit status 2 with one line for a missing, unreadable or non-UTF-8 file and for bad
``--args``; parse errors as FILE:LINE:COLUMN with the source line; unknown ops and
functions that cannot run fail unless ``--allow-skip``; ``@main``'s results printed in
StableHLO's literal syntax (every function's with ``--print``); ``prog(x)`` runs @main.
"""

import subprocess
import sys

import numpy as np
import pytest

import xops as xo
from xops.stablehlo.__main__ import main
from xops.stablehlo.literals import constant_tensor

MAIN = """func.func @main(%a: tensor<2xi32>, %b: tensor<2xf32>) -> (tensor<2xi32>, tensor<2xf32>) {
  %0 = stablehlo.add %a, %a : tensor<2xi32>
  %1 = stablehlo.multiply %b, %b : tensor<2xf32>
  return %0, %1 : tensor<2xi32>, tensor<2xf32>
}
func.func @other() -> tensor<3xbf16> {
  %0 = stablehlo.constant dense<[1.1, -0.0, 3.0]> : tensor<3xbf16>
  return %0 : tensor<3xbf16>
}
"""
ARGS = "[dense<[1, -2]> : tensor<2xi32>, dense<[0x7F800000, 3.0]> : tensor<2xf32>]"


def _write(tmp_path, text, name="p.mlir"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_missing_file_exits_2_with_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "nope.mlir")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read" in err[0] and "No such file" in err[0]


def test_non_utf8_file_exits_2_with_one_line(tmp_path, capsys):
    p = tmp_path / "bin.mlir"
    p.write_bytes(b"func.func @main() {\n  return\n}\n\xff\xfe")
    assert main([str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        (f"python -m xops.stablehlo: error: {str(p)!r} is not UTF-8 text (byte 0xff at offset 31)")
    ]


def test_parse_error_shows_file_line_column_and_source(tmp_path, capsys):
    path = _write(
        tmp_path,
        "func.func @main() -> tensor<2xi32> {\n"
        "  %0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>\n"
        "  return %0 : tensor<2xi32>\n}\n",
    )
    assert main([path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"FAIL {path}:2:38: expected ']', got '>'"
    assert out[1].strip() == "%0 = stablehlo.constant dense<[1, 2> : tensor<2xi32>"
    assert out[2].index("^") == out[1].index(">")


def test_unknown_op_fails_unless_allow_skip(tmp_path, capsys):
    path = _write(
        tmp_path, "func.func @t() {\n  %0 = stablehlo.frobnicate : tensor<2xi32>\n  return\n}\n"
    )
    assert main([path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "FAIL p.mlir::t (line 2): cannot run: unknown op stablehlo.frobnicate"
    assert main([path, "--allow-skip"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "SKIP p.mlir::t: unknown op stablehlo.frobnicate",
        "0 passed, 0 failed, 1 skipped",
    ]


def test_main_without_args_is_reported(tmp_path, capsys):
    path = _write(tmp_path, MAIN)
    assert main([path, "--no-print"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL p.mlir::main: cannot run: @main takes 2 argument(s)")
    assert out[1] == "PASS p.mlir::other"


def test_results_of_main_are_printed_as_literals_that_read_back(tmp_path, capsys):
    path = _write(tmp_path, MAIN)
    assert main([path, "--args", ARGS]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        "PASS p.mlir::main",
        "  result #0: dense<[2, -4]> : tensor<2xi32>",
        "  result #1: dense<[0x7F800000, 9.0e+00]> : tensor<2xf32>",
    ]
    assert out[3] == "PASS p.mlir::other"  # not printed without --print
    back = constant_tensor(xo.stablehlo.parse_attribute(out[2].split(": ", 1)[1]))
    np.testing.assert_array_equal(np.asarray(back), [np.inf, 9.0])


def test_print_shows_every_function(tmp_path, capsys):
    path = _write(tmp_path, MAIN)
    assert main([path, "--args", ARGS, "--print"]) == 0
    out = capsys.readouterr().out.splitlines()
    i = out.index("PASS p.mlir::other")
    assert out[i + 1] == "  result #0: dense<[1.1015625e+00, -0.0e+00, 3.0e+00]> : tensor<3xbf16>"
    assert main([path, "--args", ARGS, "--no-print"]) == 0
    assert not any("result #" in line for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(
    "args,message",
    [
        ("[dense<[1, 2> : tensor<2xi32>]", "--args: column 13: expected ']', got '>'"),
        ("[dense<[1, 2]> : tensor<2xi32>, 5]", "--args: argument #1 must be a typed literal"),
        (
            "[dense<[1, 2, 3]> : tensor<2xi32>]",
            ("--args: argument #0: stablehlo.constant: literal of shape [3] does not match"),
        ),
    ],
)
def test_bad_args_exit_2_naming_the_argument(tmp_path, capsys, args, message):
    path = _write(tmp_path, MAIN)
    assert main([path, "--args", args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"python -m xops.stablehlo: error: {message}")


def test_args_of_the_wrong_type_name_the_argument(tmp_path, capsys):
    path = _write(tmp_path, MAIN)
    args = "[dense<[1, 2]> : tensor<2xi32>, dense<[1, 2]> : tensor<2xi32>]"
    assert main([path, "--args", args]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "argument #1 of @main must be tensor<2xf32>, got tensor<2xi32>" in out[0]


def test_help_documents_every_option():
    r = subprocess.run(
        [sys.executable, "-m", "xops.stablehlo", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0
    for word in (
        "--args",
        "--print",
        "--no-print",
        "--allow-skip",
        "--trace",
        "exit status",
        "FILE:LINE:COLUMN",
        "dense<",
        "not UTF-8",
    ):
        assert word in r.stdout, word


# ---------------------------------------------------------------------------------------
# The Python API: the same errors as exceptions; prog(x) runs @main
# ---------------------------------------------------------------------------------------


def test_program_called_like_a_function_runs_main():
    prog = xo.stablehlo.load(MAIN)
    a, b = prog([1, 2], [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(a), [2, 4])
    np.testing.assert_array_equal(np.asarray(b), [4.0, 16.0])
    other = np.asarray(prog.call("other")).astype(np.float32)
    np.testing.assert_array_equal(other, [1.1015625, 0.0, 3.0])
    np.testing.assert_array_equal(np.asarray(prog["other"]()).astype(np.float32), other)
    # the older spelling, a function name first, keeps working
    np.testing.assert_array_equal(np.asarray(prog("other")).astype(np.float32), other)
    np.testing.assert_array_equal(np.asarray(prog("main", [1, 2], [1.0, 1.0])[0]), [2, 4])


def test_program_without_main_says_what_to_call():
    prog = xo.stablehlo.load(MAIN.split("func.func @other")[0].replace("@main", "@f"))
    with pytest.raises(
        xo.SpecError,
        match=r"no @main to call \(it has @f\); use "
        r"prog.call\(name, \*args\)",
    ):
        prog([1, 2], [1.0, 1.0])


def test_api_errors_are_exceptions(tmp_path):
    with pytest.raises(xo.stablehlo.LoadError, match="cannot read .*nope.mlir.*No such"):
        xo.stablehlo.load(str(tmp_path / "nope.mlir"))
    p = tmp_path / "bin.mlir"
    p.write_bytes(b"\xff")
    with pytest.raises(xo.stablehlo.LoadError, match="not UTF-8 text"):
        xo.stablehlo.load(p)
    with pytest.raises(xo.stablehlo.ParseError) as e:
        xo.stablehlo.load(
            "func.func @main() {\n  %0 = stablehlo.constant dense<[1> : tensor<1xi32>\n}"
        )
    assert (e.value.line, e.value.column) == (2, 35)
    prog = xo.stablehlo.load(
        "func.func @main() {\n  %0 = stablehlo.frobnicate : tensor<2xi32>\n  return\n}"
    )
    with pytest.raises(xo.stablehlo.Unsupported, match="unknown op stablehlo.frobnicate"):
        prog()
    with pytest.raises(xo.SpecError, match="argument #0 of @main must be tensor<2xi32>"):
        xo.stablehlo.load(MAIN)(xo.tensor([1.0, 2.0]), [1.0, 2.0])
