"""Tiny fully convolutional per-step classifiers (input [B, 4S, 64] -> probs [B, S, C])."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

FRAMES_PER_STEP = 4

class Block(nn.Module):
    def __init__(self, c, d, p):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, padding=d, dilation=d)
        self.bn = nn.BatchNorm1d(c)
        self.drop = nn.Dropout(p)

    def forward(self, h):
        return h + self.drop(F.relu(self.bn(self.conv(h))))


class Net(nn.Module):
    def __init__(self, n_classes, c1=32, c2=64, dil=(1, 2, 4, 8), norm_k=63, dropout=0.1, n_mels=64, norm="mean", lifter=0):
        super().__init__()
        self.norm_k, self.dil, self.norm, self.lifter = norm_k, tuple(dil), norm, lifter
        if lifter:
            # keep the lowest `lifter` cepstral coefficients of each frame (orthonormal DCT-II over the mel bands):
            # the spectral envelope stays, resolved pitch harmonics go
            n = torch.arange(n_mels, dtype=torch.float64)
            D = torch.cos(torch.pi / n_mels * (n[None, :] + 0.5) * n[:, None]) * (2.0 / n_mels) ** 0.5
            D[0] /= 2 ** 0.5
            self.register_buffer("lift", (D[:lifter].T @ D[:lifter]).float()[:, :, None])
        self.conv1 = nn.Conv1d(n_mels, c1, 3, padding=1)
        self.bn1 = nn.BatchNorm1d(c1)
        self.conv2 = nn.Conv1d(c1, c2 // 2, 3, padding=1)
        self.proj = nn.Conv1d(c2 // 2, c2, 1)
        self.blocks = nn.ModuleList([Block(c2, d, dropout) for d in dil])
        self.head = nn.Conv1d(c2, n_classes, 1)

    def logits(self, x):  # x [B, T, 64]
        return self.head(F.relu(self.trunk(x)))  # [B, C, S]

    def trunk(self, x):  # x [B, T, 64] -> step-rate hidden features [B, c2, S]
        x = x.transpose(1, 2)  # [B, 64, T]
        if self.lifter:
            x = F.conv1d(x, self.lift)
        # gain normalisation: subtract a local mean of the per-frame mean log energy
        e = x.mean(dim=1, keepdim=True)
        if self.norm == "max":
            # local max of the (5-frame smoothed) energy: not diluted by silences between words
            e = F.avg_pool1d(e, 5, stride=1, padding=2, count_include_pad=False)
            m = F.max_pool1d(e, self.norm_k, stride=1, padding=self.norm_k // 2)
        else:
            m = F.avg_pool1d(e, self.norm_k, stride=1, padding=self.norm_k // 2, count_include_pad=False)
        x = x - m
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.conv2(h))
        h = F.max_pool1d(h, FRAMES_PER_STEP, FRAMES_PER_STEP)  # -> step rate
        h = self.proj(h)
        for b in self.blocks:
            h = b(h)
        return h

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1).transpose(1, 2)  # [B, S, C]


def context_steps(norm_k: int, dil, norm: str = "mean") -> tuple[int, int]:
    """Exact left/right step context: frames reached by norm + 2 frame convs, then pooled, then dilated convs."""
    fr = norm_k // 2 + (2 if norm == "max" else 0) + 1 + 1  # frame-level reach on each side
    D = sum(dil)
    # output step s reaches frames [4(s-D) - fr, 4(s+D) + 3 + fr]
    left = D + (-((-fr) // FRAMES_PER_STEP))  # ceil(fr/4)
    right = D + (3 + fr) // FRAMES_PER_STEP
    return left, right


def macs_per_step(model: Net) -> int:
    """Multiply-adds per 64 ms step (convs; BN/pooling/softmax negligible)."""
    tot = 0
    for mod in model.modules():
        if isinstance(mod, nn.Conv1d):
            per_out = mod.in_channels * mod.out_channels * mod.kernel_size[0] // mod.groups
            rate = FRAMES_PER_STEP if mod in (model.conv1, model.conv2) else 1
            tot += per_out * rate
    return tot


def fold_lifter(model):
    """Folds the fixed cepstral lifter into the first convolution, so the exported graph has the plain shape
    (ensemble fusion and training/export/streaming.py rely on it). Exact: the lifter is linear, keeps a constant
    frame constant (so it commutes with the gain normalisation), and conv1(L x) = (W L) x."""
    if not getattr(model, "lifter", 0):
        return
    with torch.no_grad():
        L = model.lift[:, :, 0]  # [out band, in band]
        model.conv1.weight.copy_(torch.einsum("oik,ij->ojk", model.conv1.weight, L))
    model.lifter = 0
