"""The merged ONNX file returns the normalised geometric mean of its members' probabilities."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from training.export.ensemble import check_merged, fuse, merge
from training.models.net import Net


def export(model, fn):
    model.eval()
    torch.onnx.export(model, (torch.randn(1, 64, 64),), fn, input_names=["features"], output_names=["probs"], opset_version=17,
                      dynamic_axes={"features": {0: "B", 1: "T"}, "probs": {0: "B", 1: "S"}}, dynamo=False)


def test_merge_equals_geometric_mean(tmp_path):
    torch.manual_seed(0)
    paths = []
    for i in range(2):
        p = str(tmp_path / f"m{i}.onnx")
        export(Net(3, c2=32, dil=(1, 2)), p)
        paths.append(p)
    out = str(tmp_path / "merged.onnx")
    merge(paths, out)
    assert check_merged(paths, out, 3) < 1e-4
    import onnxruntime as ort
    x = np.random.default_rng(1).standard_normal((1, 40, 64)).astype(np.float32)
    a, b = (ort.InferenceSession(p).run(None, {"features": x})[0] for p in paths)
    m = ort.InferenceSession(out).run(None, {"features": x})[0]
    assert np.allclose(m.sum(-1), 1, atol=1e-5)
    logp = (np.log(a) + np.log(b)) / 2
    ref = np.exp(logp) / np.exp(logp).sum(-1, keepdims=True)
    assert np.allclose(m, ref, atol=1e-5)
    assert np.abs(m - a).max() > 1e-4  # a real combination, not the first member passed through


def test_members_certain_of_different_classes_give_a_distribution_not_nan(tmp_path):
    """Each member rounds the other's class to exactly 0: the log of 0 must not turn the mean into NaN."""
    paths = []
    for i, sign in enumerate((1.0, -1.0)):
        net = Net(2, c2=32, dil=(1,))
        with torch.no_grad():
            net.head.weight.zero_()
            net.head.bias.copy_(torch.tensor([1000.0 * sign, -1000.0 * sign]))
        p = str(tmp_path / f"m{i}.onnx")
        export(net, p)
        paths.append(p)
    out = str(tmp_path / "merged.onnx")
    merge(paths, out)
    import onnxruntime as ort
    x = np.random.default_rng(3).standard_normal((1, 12, 64)).astype(np.float32)
    a = ort.InferenceSession(paths[0]).run(None, {"features": x})[0]
    assert (a[..., 1] == 0).all()  # the premise: exact zeros
    m = ort.InferenceSession(out).run(None, {"features": x})[0]
    assert np.isfinite(m).all()
    assert np.allclose(m, 0.5, atol=1e-6)


def test_fused_members_equal_the_side_by_side_merge(tmp_path):
    torch.manual_seed(1)
    paths = []
    for i in range(2):
        p = str(tmp_path / f"m{i}.onnx")
        export(Net(2, c2=32, dil=(1, 2, 4)), p)
        paths.append(p)
    fused, side = str(tmp_path / "fused.onnx"), str(tmp_path / "side.onnx")
    fuse(paths, fused)
    merge(paths, side)
    assert check_merged(paths, fused, 2) < 1e-5
    import onnx
    import onnxruntime as ort
    assert len(onnx.load(fused).graph.node) < len(onnx.load(side).graph.node) / 1.8  # one member's nodes, not two
    x = np.random.default_rng(4).standard_normal((2, 64, 64)).astype(np.float32) * 3 - 5
    a, b = (ort.InferenceSession(p).run(None, {"features": x})[0] for p in (fused, side))
    assert np.abs(a - b).max() < 1e-5


def test_members_of_different_width_are_not_fused(tmp_path):
    paths = []
    for i, c2 in enumerate((32, 48)):
        p = str(tmp_path / f"m{i}.onnx")
        export(Net(2, c2=c2, dil=(1, 2)), p)
        paths.append(p)
    with pytest.raises(ValueError):
        fuse(paths, str(tmp_path / "fused.onnx"))


def test_weighted_members_fuse_to_the_weighted_geometric_mean(tmp_path):
    """ensemble add --weight-new: scaled heads make the plain mean of log-softmaxes a weighted one, exactly."""
    import json
    import onnxruntime as ort
    from training.export import ensemble as EA
    torch.manual_seed(2)
    dirs = []
    for i in range(3):
        d = tmp_path / f"m{i}"
        (d / "gender").mkdir(parents=True)
        export(Net(2, c2=32, dil=(1, 2)), str(d / "gender" / "model.onnx"))
        (d / "gender" / "manifest.json").write_text(json.dumps({"model": {"architecture": "net"}}))
        dirs.append(str(d))
    scaled = EA.weighted("gender", dirs, EA.member_weights(3, 0.5), "9.9.9", work=str(tmp_path / "weighted"))
    fused = str(tmp_path / "fused.onnx")
    fuse([f"{d}/gender/model.onnx" for d in scaled], fused)
    x = np.random.default_rng(5).standard_normal((1, 48, 64)).astype(np.float32) * 3 - 5
    p = [ort.InferenceSession(f"{d}/gender/model.onnx").run(None, {"features": x})[0] for d in dirs]
    logp = 0.25 * np.log(p[0]) + 0.25 * np.log(p[1]) + 0.5 * np.log(p[2])
    ref = np.exp(logp) / np.exp(logp).sum(-1, keepdims=True)
    got = ort.InferenceSession(fused).run(None, {"features": x})[0]
    assert np.abs(got - ref).max() < 1e-5
    plain = np.exp(np.mean(np.log(p), 0))
    plain /= plain.sum(-1, keepdims=True)
    assert np.abs(got - plain).max() > 1e-4  # the weights change the result
    assert json.loads(open(f"{scaled[2]}/gender/manifest.json").read())["training"]["head_scaled_by"] == 1.5
