"""learning_curve.py: the reproduce command of a point and the fitted gain per doubling of voices."""
from training.validate import learning_curve as LC


def test_command_names_only_the_options_a_point_changed():
    assert LC.command("gender", 1.0, 0) == "python -m training.validate.loco --task gender"
    assert LC.command("gender", 0.25, 0) == "python -m training.validate.loco --task gender --speaker-fraction 0.25"
    assert LC.command("arousal", 1.0, 3) == "python -m training.validate.loco --task arousal --corpora-count 3"


def test_slope_is_per_doubling_and_ignores_the_corpora_points():
    pts = [{"mean_train_voices": 50, "corpora_count": 0, "mean_clean": 0.80},
           {"mean_train_voices": 100, "corpora_count": 0, "mean_clean": 0.82},
           {"mean_train_voices": 200, "corpora_count": 0, "mean_clean": 0.84},
           {"mean_train_voices": 100, "corpora_count": 3, "mean_clean": 0.10}]
    assert abs(LC.slope_per_doubling(pts) - 0.02) < 1e-9
    assert LC.slope_per_doubling(pts[:1]) is None
