"""The optimiser step both recipes share."""
from __future__ import annotations


def weighted_step(model, ema, opt, sched, loss, w):
    """One optimiser step on the per-step losses weighted by `w` (voiced, labelled steps), then the weight average;
    returns (weighted loss sum, weight) for the epoch's mean loss."""
    loss = (loss * w).sum() / w.sum().clamp(min=1.0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    ema.update_parameters(model)
    return float(loss.detach()) * float(w.sum()), float(w.sum())
