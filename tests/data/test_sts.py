"""STS loaders (``bertsent.data.sts``): published pair counts, splits, skipped unscored lines."""
import pytest

from bertsent.data import load_sts

# Published sizes (SentEval); see data/manifest.csv and the provenance notes of ../shared/data.
STS_COUNTS = {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186}
SPLIT_COUNTS = {"stsb": {"train": 5749, "dev": 1500, "test": 1379}, "sickr": {"train": 4500, "dev": 500, "test": 4927}}


@pytest.mark.parametrize("name,count", STS_COUNTS.items())
def test_sts_year_counts(name, count):
    dataset = load_sts(name)
    assert len(dataset) == count
    for pairs in dataset.subsets.values():
        assert len(pairs.sentences1) == len(pairs.sentences2) == len(pairs.scores)
        assert pairs.scores.min() >= 0 and pairs.scores.max() <= 5


@pytest.mark.parametrize("name", SPLIT_COUNTS)
def test_split_counts(name):
    for split, count in SPLIT_COUNTS[name].items():
        assert len(load_sts(name, split)) == count


def test_empty_gold_lines_are_skipped():
    # STS16 input files hold more lines than scored pairs; only scored ones are kept.
    from bertsent.data.manifest import read_lines

    lines = read_lines("downstream/STS/STS16-en-test/STS.input.headlines.txt")
    assert len(load_sts("sts16").subsets["headlines"]) < len(lines)


def test_unknown_sts_dataset_is_clear():
    with pytest.raises(ValueError, match="Unknown STS dataset 'sts17'.*stsb"):
        load_sts("sts17")
