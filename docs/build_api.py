"""Build the API reference (HTML, with pdoc) from the docstrings of xops' public modules.

    python docs/build_api.py [OUTPUT_DIR]        # default: docs/api (not committed)

tests/test_api_docs.py builds it into a temporary directory and fails on any pdoc
warning, so the reference cannot go stale or break unnoticed.
"""

import pathlib
import sys
import warnings

# The public namespaces; each page lists its module's ``__all__``, and a package's pages
# include the submodules its ``__all__`` names (xops.numpy.linalg, xops.nn.functional, ...).
MODULES = [
    "xops",
    "xops.numpy",
    "xops.numpy.random",
    "xops.nn",
    "xops.optim",
    "xops.distributed",
    "xops.stablehlo",
    "!xops.tensor",
]  # xops.tensor, the module: `tensor` in xops.__all__ is the function


def build(output_directory):
    """Write the HTML reference into ``output_directory``; return pdoc's warnings."""
    import pdoc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.render.configure(docformat="restructuredtext", show_source=False)
        pdoc.pdoc(*MODULES, output_directory=pathlib.Path(output_directory))
    return caught


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "api"
    problems = build(out)
    for w in problems:
        print(f"warning: {w.message}", file=sys.stderr)
    print(f"API reference in {out}")
    sys.exit(1 if problems else 0)
