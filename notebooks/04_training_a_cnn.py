# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Training a CNN on the digits
#
# Everything from the first three notebooks at once: a small convolutional network whose
# every layer is a composition of StableHLO ops (`convolution`, `batch_norm_training`,
# `reduce_window`, `dot_general`, ...), trained with gradients from xops' tape and the
# Adam optimizer from `xo.optim`.
#
# The data are scikit-learn's bundled handwritten digits: 1797 grey images of 8x8
# pixels, ten classes, no download needed. A few epochs on two CPU cores take seconds.

# %%
import collections
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

import xops as xo
import xops.numpy as xnp
from xops import nn, optim
from xops.autodiff import tape

F = nn.functional

# %% [markdown]
# ## The data
#
# Pixels are scaled from 0..16 to [0, 1] and given a channel dimension: xops'
# convolutions default to the NCHW layout, so a batch is `f32[N, 1, 8, 8]`. A stratified
# 80/20 split keeps the ten classes balanced in the held-out test set.

# %%
digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
labels = digits.target.astype(np.int32)
x_train, x_test, y_train, y_test = train_test_split(
    images, labels, test_size=0.2, stratify=labels, random_state=0)
print("train", x_train.shape, " test", x_test.shape)
assert x_train.shape == (1437, 1, 8, 8) and x_test.shape == (360, 1, 8, 8)
assert np.bincount(y_test).min() >= 35  # every class is in the test set

fig, axes = plt.subplots(1, 10, figsize=(10, 1.3))
for k, ax in enumerate(axes):
    ax.imshow(x_train[np.flatnonzero(y_train == k)[0], 0], cmap="gray_r")
    ax.set_title(str(k))
    ax.axis("off")
plt.show()

# %% [markdown]
# ## The model
#
# Two blocks of 3x3 convolution, batch norm, ReLU and 2x2 max pooling, then a linear
# layer to ten logits:
#
# | layer | output shape | StableHLO ops |
# |---|---|---|
# | `Conv2d(1, 16, 3, padding=1)` | 16 x 8 x 8 | `convolution`, `broadcast_in_dim`, `add` |
# | `BatchNorm2d(16)`, `ReLU` | 16 x 8 x 8 | `batch_norm_training`; `relu` (compare + select) |
# | `MaxPool2d(2)` | 16 x 4 x 4 | `reduce_window` (body `maximum`) |
# | `Conv2d(16, 32, 3, padding=1)`, `BatchNorm2d`, `ReLU`, `MaxPool2d(2)` | 32 x 2 x 2 | as above |
# | `Flatten`, `Linear(128, 10)` | 10 | `reshape`, `dot_general`, `add` |
#
# `xo.nn` modules hold their parameters as leaf tensors with `requires_grad=True`; the
# modules themselves have no gradient code, since every op they call is differentiable.

# %%
class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.conv2, self.bn2 = nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(F.flatten(x))


xo.random_seed(0)  # the initialisation draws from xops' random stream
model = DigitsCNN()
for name, p in model.named_parameters():
    print(f"{name:12s} {p.type}")
conv_and_bn = (16 * 9 + 16) + 2 * 16 + (32 * 16 * 9 + 32) + 2 * 32
assert sum(p.size for p in model.parameters()) == conv_and_bn + 128 * 10 + 10

# %% [markdown]
# Before training, the ten logits are nearly equal, so the softmax cross-entropy is close
# to $\log 10 \approx 2.30$. We also list which ops one training step records on the
# tape: these are the ops whose gradient rules the backward pass runs. Four are `xops.nn`'s
# own fused ops rather than spec ops: `conv_bias` (a layer's `convolution` and its bias
# `add` as one op, the same bits: the bias is added in the convolution kernel's last
# step; its rule is the convolution's and the add's), `bias_add` (the linear layer's
# bias), `relu` (the spec's `select(compare(x, 0, LE), 0, x)` in one step, the same bits
# and gradient) and `softmax_cross_entropy` (the loss's log-sum-exp and pick in float64,
# rounded once, in place of a dozen ops).

# %%
xb, yb = xo.tensor(x_train[:32]), xo.tensor(y_train[:32])
loss = F.softmax_cross_entropy(model(xb), yb)
print(f"initial loss {loss:.4f}, log(10) = {np.log(10):.4f}")
assert abs(loss - np.log(10)) < 0.5

recorded = collections.Counter(node.op for node in tape._topological([loss]))
print(dict(recorded))
for op in ["conv_bias", "batch_norm_training", "reduce_window", "relu", "dot_general"]:
    assert recorded[op] >= 1, op

# %% [markdown]
# ## Training
#
# Minibatches of 32, Adam with a learning rate of 0.01 decayed by a cosine schedule.
# Each step is the usual four lines: forward and loss, `opt.zero_grad()`,
# `loss.backward()` (the tape walk), `opt.step()`.
#
# The matrices here are tiny, so we limit NumPy's BLAS to one thread while training
# (`threadpoolctl`): starting and synchronising BLAS threads costs more than it saves
# at this size, especially on a machine with two busy cores.

# %%
EPOCHS, BATCH = 4, 32
opt = optim.Adam(model.parameters(), lr=0.01)
schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
shuffle = np.random.default_rng(0)


def evaluate(model, x, y, batch=BATCH):
    """Test accuracy in eval mode (batch norm uses its running statistics)."""
    model.eval()
    with xo.no_grad():
        pred = xnp.concat([model(xo.tensor(x[i:i + batch])).argmax(axis=1)
                           for i in range(0, len(x), batch)])
    model.train()
    return (pred == y).astype(xnp.float64).mean().item(), np.asarray(pred)


step_losses, epoch_losses, accuracies = [], [], []
start = time.perf_counter()
with threadpool_limits(limits=1, user_api="blas"):
    for epoch in range(EPOCHS):
        order = shuffle.permutation(len(x_train))
        losses = []
        for i in range(0, len(order) - 1, BATCH):  # (batch norm needs 2+ images)
            idx = order[i:i + BATCH]
            loss = F.softmax_cross_entropy(model(xo.tensor(x_train[idx])),
                                           xo.tensor(y_train[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        schedule.step()
        step_losses += losses
        epoch_losses.append(np.mean(losses))
        accuracy, predictions = evaluate(model, x_test, y_test)
        accuracies.append(accuracy)
        print(f"epoch {epoch + 1}: train loss {epoch_losses[-1]:.4f}, "
              f"test accuracy {100 * accuracy:.2f}%")
print(f"{time.perf_counter() - start:.1f} s")

# %% [markdown]
# The held-out accuracy must be at least 90% (it is usually around 98% after four
# epochs), and the loss must have dropped well below its starting value.

# %%
assert accuracies[-1] >= 0.9, accuracies
assert epoch_losses[-1] < epoch_losses[0] / 2, epoch_losses
assert np.all(np.isfinite(step_losses))

confusion = np.zeros((10, 10), int)
np.add.at(confusion, (y_test, predictions), 1)
print("confusion matrix (rows: true digit, columns: predicted):\n", confusion)
assert np.trace(confusion) == round(accuracies[-1] * len(y_test))

# %% [markdown]
# ## Plots: the loss, and what the first layer learned

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
steps_per_epoch = len(step_losses) / EPOCHS
axes[0].plot(np.arange(1, len(step_losses) + 1), step_losses, lw=0.7, alpha=0.6,
             label="minibatch")
axes[0].plot(steps_per_epoch * np.arange(1, EPOCHS + 1), epoch_losses, "o-",
             label="epoch mean")
axes[0].set_yscale("log")
axes[0].set_xlabel("step")
axes[0].set_ylabel("softmax cross-entropy")
axes[0].set_title("training loss")
axes[0].legend()
axes[1].plot(np.arange(1, EPOCHS + 1), 100 * np.array(accuracies), "o-")
axes[1].set_xticks(np.arange(1, EPOCHS + 1))
axes[1].set_xlabel("epoch")
axes[1].set_ylabel("test accuracy (%)")
axes[1].set_title("held-out accuracy")
plt.tight_layout()
plt.show()

# %% [markdown]
# The sixteen 3x3 filters of `conv1` (`weight` is OIHW: 16 x 1 x 3 x 3), drawn with a
# diverging colour map: red weights add the pixel, blue ones subtract it. Many look like
# small edge and stroke detectors. Beside them, what they make of one test digit: the
# first layer's sixteen feature maps.

# %%
filters = np.asarray(model.conv1.weight)
assert filters.shape == (16, 1, 3, 3)
limit = np.abs(filters).max()
fig, axes = plt.subplots(2, 8, figsize=(10, 2.8))
for k, ax in enumerate(axes.flat):
    ax.imshow(filters[k, 0], cmap="RdBu_r", vmin=-limit, vmax=limit)
    ax.set_title(f"filter {k}", fontsize=8)
    ax.axis("off")
fig.suptitle("learned first-layer filters")
plt.show()

sample = xo.tensor(x_test[:1])
with xo.no_grad():
    feature_maps = np.asarray(model.conv1(sample))[0]
# the first layer is a plain convolution: check one feature map against NumPy
padded = np.pad(x_test[0, 0], 1)
by_hand = np.array([[np.sum(padded[i:i + 3, j:j + 3] * filters[5, 0]) for j in range(8)]
                    for i in range(8)]) + model.conv1.bias[5].item()
np.testing.assert_allclose(feature_maps[5], by_hand, rtol=1e-5, atol=1e-5)

fig, axes = plt.subplots(2, 9, figsize=(11, 2.8))
axes[0, 0].imshow(x_test[0, 0], cmap="gray_r")
axes[0, 0].set_title(f"digit {y_test[0]}", fontsize=8)
axes[1, 0].axis("off")
for k, ax in enumerate(axes[:, 1:].flat):
    ax.imshow(feature_maps[k], cmap="viridis")
    ax.set_title(f"map {k}", fontsize=8)
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
plt.show()

# %% [markdown]
# ## Summary
#
# * `xo.nn` layers are compositions of spec ops; the tape differentiates them with the
#   ops' own rules (`convolution`'s is two convolutions, max pooling's is
#   `select_and_scatter`, batch norm's is `batch_norm_grad`).
# * A few epochs on the 8x8 digits reach about 98% held-out accuracy in seconds.
# * `python -m xops.examples.train_digits` is the same training as a script, with
#   command-line options.
#
# Next: [5. Running a JAX-exported StableHLO program](05_stablehlo_from_jax.ipynb).
