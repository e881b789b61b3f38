"""scikit-learn's array API dispatch runs on xops tensors (through ``xops.numpy``, found
by array-api-compat via ``Tensor.__array_namespace__``) and agrees with NumPy:
StandardScaler, MinMaxScaler, PCA (full SVD and covariance_eigh solvers) and
LinearDiscriminantAnalysis (its array-API solver, "svd"), in float64 and float32.

SciPy reads ``SCIPY_ARRAY_API`` once, at import, so the check runs in a fresh
interpreter that sets it first."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")  # >= 1.6 vendors array-api-compat; older ones need the package

_SCRIPT = r"""
import json, os
os.environ["SCIPY_ARRAY_API"] = "1"
import numpy as np
import sklearn
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.preprocessing import MinMaxScaler, StandardScaler
import xops as xo

rng = np.random.default_rng(0)
report = {}
for dtype in ("float64", "float32"):
    X = (rng.standard_normal((80, 6)) * [1, 2, 3, 0.5, 5, 1] + [0, 1, -2, 3, 0, 7]).astype(dtype)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0.5).astype(np.int64) + (X[:, 2] > 0)
    Xt, yt = xo.tensor(X), xo.tensor(y)
    cases = {
        "StandardScaler": lambda: StandardScaler(),
        "MinMaxScaler": lambda: MinMaxScaler(feature_range=(-1, 2)),
        "PCA": lambda: PCA(n_components=3, svd_solver="full"),
        "PCA-covariance_eigh": lambda: PCA(n_components=3, svd_solver="covariance_eigh"),
        "LinearDiscriminantAnalysis": lambda: LinearDiscriminantAnalysis(),
    }
    for name, make in cases.items():
        with sklearn.config_context(array_api_dispatch=True):
            est = make().fit(Xt, yt)
            out = est.transform(Xt)
            extra = est.predict(Xt) if hasattr(est, "predict") else None
            proba = est.predict_proba(Xt) if hasattr(est, "predict_proba") else None
            back = est.inverse_transform(out) if hasattr(est, "inverse_transform") else None
        ref = make().fit(X, y)
        row = {"type": type(out).__name__, "dtype": str(np.asarray(out).dtype),
               "err": float(np.abs(np.asarray(out) - ref.transform(X)).max())}
        if name.startswith("PCA"):  # component signs are implementation-defined: compare |.|
            row["err"] = float(np.abs(np.abs(np.asarray(out)) - np.abs(ref.transform(X))).max())
            row["var_err"] = float(np.abs(np.asarray(est.explained_variance_)
                                          - ref.explained_variance_).max())
        if extra is not None:
            row["predict_type"] = type(extra).__name__
            row["predict_mismatch"] = int((np.asarray(extra) != ref.predict(X)).sum())
            row["proba_err"] = float(np.abs(np.asarray(proba) - ref.predict_proba(X)).max())
        if back is not None:
            row["inverse_err"] = float(np.abs(np.asarray(back)
                                              - ref.inverse_transform(ref.transform(X))).max())
        report[f"{name}/{dtype}"] = row
print("REPORT" + json.dumps(report))
"""


def test_sklearn_estimators_on_xops_tensors():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    res = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("REPORT"))
    report = json.loads(line[len("REPORT") :])
    assert len(report) == 10
    for key, row in report.items():
        tol = 1e-10 if key.endswith("float64") else 2e-4
        assert row["type"] == "Tensor", key  # results stay xops tensors
        assert row["dtype"] == key.split("/")[1], (key, row)
        assert row["err"] <= tol * 10, (key, row)
        if "var_err" in row:
            assert row["var_err"] <= tol * 100, (key, row)
        if "predict_type" in row:
            assert row["predict_type"] == "Tensor" and row["predict_mismatch"] == 0, (key, row)
            assert row["proba_err"] <= tol * 100, (key, row)
        if "inverse_err" in row:
            assert row["inverse_err"] <= tol * 10, (key, row)
