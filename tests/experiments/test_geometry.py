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
