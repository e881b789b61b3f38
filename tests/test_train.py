"""The main job, short: python -m xops.examples.train_digits trains a CNN on sklearn's
bundled 8x8 digits (conv, batch norm, max pooling, dense; softmax cross-entropy; Adam)."""

import numpy as np
import pytest

import xops as xo

pytest.importorskip("sklearn")
from xops.examples import train_digits  # noqa: E402


def test_short_run_learns_well_above_chance():
    lines = []
    res = train_digits.train(
        epochs=2, batch_size=32, lr=0.01, seed=0, progress=False, log=lines.append, limit=640
    )
    losses = res["step_losses"]
    assert len(losses) == 2 * 20
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert res["epoch_losses"][1] < res["epoch_losses"][0]
    assert res["accuracy"] > 0.8  # chance is 0.1
    assert lines[0].startswith("epoch  1/2  train loss") and "test accuracy" in lines[-1]


def test_data_split_is_stratified_and_disjoint():
    x_train, y_train, x_test, y_test = train_digits.load_data()
    assert x_train.shape[1:] == (1, 8, 8) and x_train.dtype == np.float32
    assert len(x_train) + len(x_test) == 1797 and 355 <= len(x_test) <= 365
    assert 0 <= x_train.min() and x_train.max() <= 1
    counts = np.bincount(y_test, minlength=10)
    assert counts.min() >= 34 and counts.max() <= 38
    train_rows = {r.tobytes() for r in x_train}
    assert sum(r.tobytes() in train_rows for r in x_test) < 10  # (a few digits repeat)


def test_command_line_saves_weights_and_plot(tmp_path, capsys):
    weights, png = tmp_path / "digits.npz", tmp_path / "digits.png"
    args = [
        "--epochs",
        "1",
        "--batch-size",
        "32",
        "--limit",
        "128",
        "--seed",
        "1",
        "--no-progress",
        "--save",
        str(weights),
    ]
    try:
        import matplotlib  # noqa: F401

        args += ["--plot", str(png)]
    except ImportError:
        png = None
    assert train_digits.main(args) == 0
    out = capsys.readouterr().out
    assert "epoch  1/1" in out and f"weights saved to {weights}" in out
    model = train_digits.build_model()
    model.load_state_dict(xo.nn.load(weights))
    if png is not None:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        train_digits.main(["--epochs", "0"])
