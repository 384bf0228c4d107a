"""The causal provisional head (training/recipes/causal.py): it hears no future beyond its lookahead, and its stateful
graph fed step by step gives what the network gives over the whole signal."""
import numpy as np
import torch

from training.recipes.causal import CausalNet, check_stream, export_stream


def _net(lookahead: int) -> CausalNet:
    torch.manual_seed(0)
    net = CausalNet(3, c1=8, c2=16, dil=(1, 2), norm_k=7, lookahead=lookahead)
    for m in net.modules():  # batch norms away from the identity, so folding them is tested
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return net.eval()


def test_no_future_reaches_a_step():
    net = _net(0)
    x = torch.randn(1, 4 * 40, 64)
    y = x.clone()
    y[:, 4 * 25:] += 3.0  # change steps 25 onwards
    with torch.no_grad():
        a, b = net.logits(x), net.logits(y)
    assert torch.equal(a[:, :, :25], b[:, :, :25])
    assert not torch.allclose(a[:, :, 25:], b[:, :, 25:])


def test_prediction_reads_the_output_lookahead_steps_later():
    net = _net(2)
    x = np.random.default_rng(1).standard_normal((4 * 30, 64)).astype(np.float32)
    with torch.no_grad():
        p = torch.softmax(net.logits(torch.from_numpy(x[None])), dim=1)[0].T.numpy()
    q = net.predict(x)
    assert np.allclose(q[:28], p[2:30]) and np.allclose(q[28:], p[29])


def test_stateful_graph_equals_the_network(tmp_path):
    for lookahead in (0, 1):
        net = _net(lookahead)
        path = str(tmp_path / f"head{lookahead}.onnx")
        head = export_stream(net, path)
        assert head["delay_steps"] == lookahead and head["state_size"] > 0
        assert check_stream(net, path, steps=120) < 1e-4
