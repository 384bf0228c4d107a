"""Linear heads on encoder embeddings and their fusion with a per-step network, in numpy/torch:
logistic regressions with speaker-balanced weights (every speaker weighs the same, and each
gender half; gender.py) and their C-class form, softmax regressions with speaker- and
class-balanced weights (affect.py), fitted by L-BFGS."""
from __future__ import annotations

import numpy as np
import torch


def balanced_weights(speakers: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each speaker sums to 1, then each class sums to half of the total."""
    w = np.zeros(len(speakers), np.float64)
    _, inv, counts = np.unique(speakers, return_inverse=True, return_counts=True)
    w = 1.0 / counts[inv]
    for c in (0, 1):
        m = labels == c
        if m.any():
            w[m] *= 0.5 * len(np.unique(speakers)) / w[m].sum()
    return w / w.mean()


def logistic(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float, iters: int = 200) -> tuple[np.ndarray, float]:
    """argmin mean(w * logloss) + l2/2 |coef|^2 -> (coef, bias)."""
    Xt = torch.from_numpy(np.asarray(X, np.float64))
    yt = torch.from_numpy(np.asarray(y, np.float64))
    wt = torch.from_numpy(np.asarray(w, np.float64))
    coef = torch.zeros(Xt.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([coef, bias], max_iter=iters, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        z = Xt @ coef + bias
        loss = (wt * torch.nn.functional.binary_cross_entropy_with_logits(z, yt, reduction="none")).mean() + 0.5 * l2 * (coef * coef).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return coef.detach().numpy(), float(bias.detach().numpy()[0])


def class_balanced_weights(speakers: np.ndarray, y: np.ndarray, C: int) -> np.ndarray:
    """Each speaker sums to 1 within its class, then each class sums to 1/C of the total."""
    w = np.zeros(len(y))
    for c in range(C):
        m = y == c
        if not m.any():
            continue
        _, inv, counts = np.unique(speakers[m], return_inverse=True, return_counts=True)
        wc = 1.0 / counts[inv]
        w[m] = wc / wc.sum()
    return w / w.mean()


def softmax_regression(X: np.ndarray, y: np.ndarray, w: np.ndarray, C: int, l2: float, iters: int = 300):
    """argmin mean(w * CE) + l2/2 |W|^2 -> (W [C, d], b [C])."""
    Xt = torch.from_numpy(np.asarray(X, np.float64))
    yt = torch.from_numpy(np.asarray(y, np.int64))
    wt = torch.from_numpy(np.asarray(w, np.float64))
    W = torch.zeros(C, Xt.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(C, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], max_iter=iters, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (wt * torch.nn.functional.cross_entropy(Xt @ W.T + b, yt, reduction="none")).mean() + 0.5 * l2 * (W * W).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return W.detach().numpy(), b.detach().numpy()
