"""docs/status.md is generated from the op registry; the committed file must be current."""

from pathlib import Path

from xops import status


def test_status_table_is_current():
    committed = (Path(__file__).parents[1] / "docs" / "status.md").read_text()
    fresh = status.generate()
    assert committed == fresh, (
        "docs/status.md is stale: run `python -m xops.status` and commit the result"
    )


def test_status_rows_say_what_the_registry_declares():
    rows = {
        line.split("|")[1].strip().strip("`"): [c.strip() for c in line.split("|")[2:-1]]
        for line in status.generate(conformance=None).splitlines()
        if line.startswith("| `")
    }
    family, checks, reference, cpu, cuda, grad, quantized, _ = rows["reduce_window"]
    assert (reference, cpu, grad, quantized) == (
        "`reduce_window_reference`",
        "Numba",
        "rule",
        "bodies",
    )
    assert rows["exponential"][6] == "dequantize" and rows["pad"][6] == "storage"
    assert rows["while"][5] == "body" and rows["replica_id"][5] == "—"
    assert "C1" in rows["add"][1]


_DECOY = "C97"  # a label-like string in this module's globals


def test_labels_come_from_code_and_tables_not_from_caches():
    """Recognising a user's body caches what it read (here: this module's globals, which
    hold _DECOY); the status generator must not take labels from such caches, or the
    table would depend on what the process ran before."""
    import numpy as np

    import xops as xo
    from xops import registry

    x = xo.tensor(np.array([3.0, 1.0, 2.0], np.float32))
    (out,) = xo.sort([x], dimension=0, comparator=lambda a, b: xo.compare(a, b, "LT"))
    assert out.tolist() == [1.0, 2.0, 3.0]
    labels = status._labels(status._functions_reached(registry.get("sort").fn))
    assert labels == ["C1", "C3", "C4", "C5"]
