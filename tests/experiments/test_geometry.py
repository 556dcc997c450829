"""The geometry chapter's claims (``bertsent.experiments.geometry``), on hand-made measurements."""
import pandas as pd
import pytest


def test_geometry_claims_are_directions_read_against_the_untrained_cls():
    from bertsent.experiments.geometry import geometry_claims
    from bertsent.report.claims import CLAIM_COLUMNS, Spread

    geometry = pd.DataFrame([("m", "cls", 0.56, -1.68), ("m", "mean", 0.02, -3.8), ("m", "sg", 0.61, -1.53),
                             ("m", "sg_opt", 0.48, -2.03)], columns=["backbone", "method", "anisotropy", "uniformity"])
    claims = geometry_claims(geometry, ["m", "absent"], ["sg", "sg_opt"])
    assert list(claims.columns) == ["claim", "backbone", "method", "quantity", *CLAIM_COLUMNS[1:]]
    claims = claims.set_index(["method", "quantity"])
    assert claims.loc[("sg_opt", "anisotropy"), "our_effect"] == pytest.approx(0.48 - 0.56)
    assert claims["paper_effect"].isna().all() and claims["ratio"].isna().all()
    # one seed and no measured spread: the tolerance is blank and says so, and no verdict is given
    assert claims["tolerance"].isna().all() and claims["noise_source"].str.startswith("not measured").all()
    assert (claims["seeds"] == "one seed").all() and (claims["verdict"] == "noise not measured").all()
    # with a spread of the measurement over seeds lent, small changes are within noise
    lent = geometry_claims(geometry, ["m"], ["sg_opt"], spreads={"anisotropy": Spread(0.05, 3, "test"),
                                                                 "uniformity": Spread(0.05, 3, "test")})
    assert lent.set_index("quantity")["verdict"].to_dict() == {"anisotropy": "within noise", "uniformity": "reproduced"}
    opposite = geometry_claims(geometry, ["m"], ["sg"], spreads={"anisotropy": Spread(0.01, 3, "test"),
                                                                 "uniformity": Spread(0.01, 3, "test")})
    assert opposite.set_index("quantity")["verdict"].to_dict() == {"anisotropy": "not reproduced",  # higher
                                                                   "uniformity": "not reproduced"}


def test_geometry_row_finds_one_readout_or_none():
    from bertsent.experiments.geometry import geometry_row

    geometry = pd.DataFrame([("m", "cls", 0.56), ("m", "mean", 0.02), ("n", "cls", 0.9)],
                            columns=["backbone", "method", "anisotropy"])
    assert geometry_row(geometry, "m", "mean")["anisotropy"] == 0.02
    assert geometry_row(geometry, "n", "cls")["anisotropy"] == 0.9
    assert geometry_row(geometry, "m", "sg") is None and geometry_row(geometry, "absent", "cls") is None


def test_a_trained_readout_is_measured_once_then_read_back_without_its_model(fake_training, monkeypatch, tmp_path):
    """A trained run's geometry row, spectrum and cosine bands are evaluations of the run: measured on its model the
    first time, committed, then read back on a machine without the model (no training, no measuring); asked with
    other settings, the stored tables are refused."""
    import shutil
    from types import SimpleNamespace

    import bertsent.encode.backbones as backbones
    from bertsent.data.sts import load_stsb
    from bertsent.experiments import geometry
    from bertsent.training import SelfGuidedConfig

    measured, original = [], {name: getattr(geometry, name) for name in
                              ("readout_geometry", "readout_spectrum", "readout_cosine_bands")}
    tables = {"readout_geometry": lambda r: {"backbone": r.backbone, "method": r.method, "anisotropy": 0.25,
                                             "alignment": 0.5, "uniformity": -2.0, "n_positive": 3, "sts_avg": 70.0},
              "readout_spectrum": lambda r: pd.DataFrame({"index": [1, 2], "singular_value": [0.75, 0.25]}),
              "readout_cosine_bands": lambda r: pd.DataFrame({"gold": [4.5], "band": ["4-5"], "cosine": [0.9]})}
    for name, table in tables.items():
        monkeypatch.setattr(geometry, name, lambda r, *a, _name=name, _table=table, **k: (
            original[_name](r, *a, **k) if isinstance(r, geometry.StoredReadout)
            else (measured.append(_name), _table(r))[1]))
    monkeypatch.setattr(backbones, "load_backbone", lambda source: SimpleNamespace(name=source))
    monkeypatch.setattr(backbones, "backbone_sentence_pooling", lambda backbone: "cls")
    monkeypatch.setattr(geometry, "Encoder", lambda backbone, **_: SimpleNamespace(backbone=backbone))
    monkeypatch.setattr(geometry, "sentence_token_pooling", lambda backbone: "cls")
    stsb = load_stsb("test").head(8)
    sts = {"stsb": stsb}
    config, dev = SelfGuidedConfig(max_steps=4), ["pair 1", "pair 2", "pair 3"]
    where = dict(dev=dev, runs_dir=tmp_path / "cache", results_dir=tmp_path / "results")

    first = geometry.trained_readout("m", "sg_opt", "stsb_all", config, stsb, sts, n_pairs=100, **where)
    assert sorted(measured) == ["readout_cosine_bands", "readout_geometry", "readout_spectrum"]
    assert len(fake_training) == 1
    shutil.rmtree(tmp_path / "cache")  # another machine: the model is gone, its measurements are committed
    again = geometry.trained_readout("m", "sg_opt", "stsb_all", config, stsb, sts, n_pairs=100, **where)
    assert len(measured) == 3 and len(fake_training) == 1
    row = geometry.readout_geometry(again, stsb, sts, n_pairs=100)
    assert row == {**geometry.readout_geometry(first, stsb, sts, n_pairs=100), "method": "sg_opt"}
    assert row["anisotropy"] == 0.25 and row["backbone"] == "m"
    assert geometry.readout_spectrum(again, stsb.sentences())["singular_value"].tolist() == [0.75, 0.25]
    assert geometry.readout_cosine_bands(again, stsb)["band"].tolist() == ["4-5"]
    with pytest.raises(ValueError, match=r"m sg_opt: its stored tables were measured with other settings.*n_pairs"):
        geometry.readout_geometry(again, stsb, sts, n_pairs=500)


def test_untrained_readouts_are_measured_once_then_read_back_without_the_backbone(tiny_gemma_dir, tmp_path,
                                                                                    monkeypatch):
    """An untrained backbone's readouts and per-layer anisotropy are committed under ``results/runs/untrained/``
    with the numbers a direct measurement gives; read back, the backbone is not loaded; other fit sentences or other
    settings are measured again."""
    import itertools

    from bertsent.encode import backbones
    from bertsent.encode.encoder import Encoder
    from bertsent.encode.whitening import Whitening
    from bertsent.experiments import geometry
    from tests.experiments.test_sentence_token import tiny_sts

    stsb = tiny_sts()["tiny"]
    sts = {"tiny": stsb}
    fit = [" ".join(words) for words in itertools.permutations(["a", "man", "plays", "guitar", "dogs"], 3)][:40]
    measure = dict(n_pairs=20, max_points=8, top=5, results_dir=tmp_path, batch_size=4)
    first = geometry.untrained_readouts(tiny_gemma_dir, ["cls", "mean", "whitening"], stsb, sts, fit, **measure)
    curves = geometry.stored_layer_anisotropy(tiny_gemma_dir, stsb.sentences(), ["cls", "last", "mean"], n_pairs=20,
                                              results_dir=tmp_path, batch_size=4)

    encoder = Encoder(backbones.load_backbone(tiny_gemma_dir), batch_size=4)
    whitened = Whitening.fit(encoder.encode(fit, ["mean"]).vectors["mean"][-1]).transform
    direct = [geometry.Readout(tiny_gemma_dir, "cls", encoder, "last"),
              geometry.Readout(tiny_gemma_dir, "mean", encoder, "mean"),
              geometry.Readout(tiny_gemma_dir, "whitening", encoder, "mean", transform=whitened)]
    for stored, readout in zip(first, direct):  # a causal LM's "cls" is its last token
        assert geometry.readout_geometry(stored, stsb, sts, n_pairs=20, max_points=8) == pytest.approx(
            geometry.readout_geometry(readout, stsb, sts, n_pairs=20, max_points=8))
        pd.testing.assert_frame_equal(geometry.readout_spectrum(stored, stsb.sentences(), top=5),
                                      geometry.readout_spectrum(readout, stsb.sentences(), top=5))
    assert sorted(curves["pooling"].unique()) == ["last", "mean"]  # a causal LM has no [CLS]
    pd.testing.assert_frame_equal(curves, geometry.layer_anisotropy(encoder, stsb.sentences(), ["last", "mean"], 20))
    record = next((tmp_path / "runs" / "untrained").iterdir())
    assert len(list(record.glob("geometry_*.csv"))) == 3 and len(list(record.glob("layer_anisotropy-*.csv"))) == 1

    def no_loading(*_):
        raise AssertionError("the backbone was loaded although its measurements are committed")

    monkeypatch.setattr(backbones, "load_backbone", no_loading)
    again = geometry.untrained_readouts(tiny_gemma_dir, ["cls", "mean", "whitening"], stsb, sts, fit, **measure)
    for stored, read in zip(first, again):
        assert read.tables.keys() == stored.tables.keys()
        for name in stored.tables:
            pd.testing.assert_frame_equal(read.tables[name], stored.tables[name])
    read_curves = geometry.stored_layer_anisotropy(tiny_gemma_dir, stsb.sentences(), ["cls", "last", "mean"],
                                                   n_pairs=20, results_dir=tmp_path, batch_size=4)
    pd.testing.assert_frame_equal(read_curves, curves)
    # other fit sentences: the whitened readout is measured again
    with pytest.raises(AssertionError, match="committed"):
        geometry.untrained_readouts(tiny_gemma_dir, ["whitening"], stsb, sts, fit[:-1], **measure)
    with pytest.raises(AssertionError, match="committed"):
        geometry.stored_layer_anisotropy(tiny_gemma_dir, stsb.sentences(), ["mean"], n_pairs=30, results_dir=tmp_path)
    with pytest.raises(ValueError, match=r"unknown untrained readout.*'max'.*choose among"):
        geometry.untrained_readouts(tiny_gemma_dir, {"m": "max"}, stsb, sts, **measure)
    with pytest.raises(ValueError, match="needs fit_sentences"):
        geometry.untrained_readouts(tiny_gemma_dir, ["whitening"], stsb, sts, **measure)
