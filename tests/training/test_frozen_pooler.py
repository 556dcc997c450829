"""The frozen-encoder arm of layer-wise attention pooling: cached readouts are what the model's pooler reads, a step
on them is a step of the full model with its encoder frozen, the pooler moves, the entropy is right, runs resume."""
import numpy as np
import pytest
import torch

from bertsent.training.frozen_pooler import (
    FrozenPoolerConfig,
    build_pooler,
    encode_states,
    entropy_ratio,
    layer_weights,
    release_initialisation,
    train_frozen_pooler,
    triplet_loss,
    weight_change,
)

from tests.toy_nli import DEV, TRIPLETS

SENTENCES = list(dict.fromkeys(TRIPLETS.anchors + TRIPLETS.positives + TRIPLETS.negatives))


@pytest.fixture(scope="module")
def backbone(tiny_bert):
    from bertsent.encode.backbones import load_backbone

    return load_backbone(tiny_bert)


@pytest.fixture(scope="module")
def states(backbone, tiny_bert, tmp_path_factory):
    from bertsent.experiments.layer_states import cache_layer_states

    return cache_layer_states(backbone, tiny_bert, "nli", SENTENCES, max_length=32, batch_size=4,
                              root=tmp_path_factory.mktemp("states"), log=lambda _: None)


def rows(states):
    return tuple(states.rows(part) for part in (TRIPLETS.anchors, TRIPLETS.positives, TRIPLETS.negatives))


def test_cached_readouts_are_what_the_models_pooler_reads(backbone, states):
    from bertsent.models.layer_attention import LayerAttentionModel

    model = LayerAttentionModel.on_backbone(backbone, "att_both_cls").eval()
    assert states.s.shape == (len(SENTENCES), model.pooler.n_states, model.pooler.dim)
    with torch.no_grad():
        for i in (0, 5, len(SENTENCES) - 1):  # each sentence alone: no padding at all
            tokens = backbone.tokenizer([SENTENCES[i]], return_tensors="pt")
            s, t = model.readouts(tokens["input_ids"], tokens["attention_mask"])
            np.testing.assert_allclose(states.s[i], s[0].numpy(), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(states.t[i], t[0].numpy(), rtol=1e-5, atol=1e-5)
        # and the pooled vector of the cached readouts is the model's own output
        tokens = backbone.tokenizer(SENTENCES[:3], padding=True, return_tensors="pt")
        z = model(tokens["input_ids"], tokens["attention_mask"])
        vectors, _ = encode_states(model.pooler, states.s, states.t, np.arange(3))
    np.testing.assert_allclose(vectors, z.numpy(), rtol=1e-4, atol=1e-5)


def test_an_interrupted_cache_resumes_to_the_same_arrays(backbone, tiny_bert, states, tmp_path):
    from bertsent.experiments.layer_states import LayerStates, cache_layer_states

    root = tmp_path / "states"
    first = cache_layer_states(backbone, tiny_bert, "nli", SENTENCES, max_length=32, batch_size=4, root=root,
                               flush_every=1, log=lambda _: None, stop_after=2)
    assert first is None
    (directory,) = root.iterdir()
    assert (directory / "progress.json").is_file() and not (directory / "done.json").is_file()
    with pytest.raises(FileNotFoundError, match="not a complete"):
        LayerStates.open(directory)
    messages = []
    resumed = cache_layer_states(None, tiny_bert, "nli", SENTENCES, max_length=32, batch_size=4, root=root,
                                 log=messages.append)
    assert any("resuming at batch 2" in m for m in messages)
    np.testing.assert_array_equal(resumed.s, states.s)
    np.testing.assert_array_equal(resumed.t, states.t)
    assert resumed.info["sentences"] == len(SENTENCES) and resumed.info["sentences_per_second"] > 0
    # another max_length is another entry
    from bertsent.experiments.layer_states import states_key

    assert states_key(tiny_bert, "nli", SENTENCES, 32, 4) != states_key(tiny_bert, "nli", SENTENCES, 16, 4)


def test_a_step_on_cached_readouts_is_a_step_of_the_full_model_with_its_encoder_frozen(backbone, states):
    from bertsent.losses.attention_pooling import supervised_infonce_loss
    from bertsent.models.layer_attention import LayerAttentionModel
    from bertsent.training.loop import seed_step

    config = FrozenPoolerConfig(pooling="att_both_cls", hard_negative_weight=1.0)
    cached = build_pooler(states.dim, states.n_states, config).train()
    model = LayerAttentionModel.on_backbone(backbone, "att_both_cls")
    model.pooler.load_state_dict(cached.state_dict())
    model.encoder.eval()  # frozen: no dropout, no gradient
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    model.pooler.train()  # RReLU draws random slopes: the same seed must give the same draws
    ids = [0, 2, 3, 5]
    texts = ([TRIPLETS.anchors[i] for i in ids] + [TRIPLETS.positives[i] for i in ids]
             + [TRIPLETS.negatives[i] for i in ids])
    tokens = backbone.tokenizer(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    seed_step(42, 7)
    z = model(tokens["input_ids"], tokens["attention_mask"])
    full = supervised_infonce_loss(*z.chunk(3), config.temperature, config.hard_negative_weight)
    full.backward()

    anchors, positives, negatives = rows(states)
    seed_step(42, 7)
    loss = triplet_loss(cached, states.s, states.t, anchors[ids], positives[ids], negatives[ids], config)
    loss.backward()
    torch.testing.assert_close(loss, full, rtol=1e-5, atol=1e-5)
    for name, p in cached.named_parameters():
        torch.testing.assert_close(p.grad, dict(model.pooler.named_parameters())[name].grad, rtol=1e-4, atol=1e-6)
    assert all(p.grad is None for p in model.encoder.parameters())
    # another step seed draws other slopes: the pooled vectors differ by more than the tolerances above allow, so the
    # comparison above is not vacuous (with the release's small initial weights the loss itself barely moves)
    block = np.concatenate([anchors[ids], positives[ids], negatives[ids]])
    pooled_at = {}
    with torch.no_grad():
        for step in (7, 8):
            seed_step(42, step)
            pooled_at[step] = cached(torch.from_numpy(states.s[block]), torch.from_numpy(states.t[block]))
    assert not torch.allclose(pooled_at[7], pooled_at[8], rtol=1e-4, atol=1e-6)


def test_the_release_initialisation_is_normal_002_with_zero_bias():
    from bertsent.models.layer_attention import LayerAttentionPooler

    torch.manual_seed(0)
    pooler = release_initialisation(LayerAttentionPooler(256, 13, "att_both_cls"))
    for name in ("query", "key", "value", "output"):
        weight = getattr(pooler, name).weight
        assert weight.std().item() == pytest.approx(0.02, rel=0.03)
        assert abs(weight.mean().item()) < 0.002
    assert (pooler.output.bias == 0).all()
    # build_pooler: seeded, and "default" keeps PyTorch's draw (sd 1/sqrt(3 fan_in) = 0.036 at d = 256)
    config = FrozenPoolerConfig(seed=3)
    torch.testing.assert_close(build_pooler(256, 13, config).state_dict(), build_pooler(256, 13, config).state_dict())
    default = build_pooler(256, 13, FrozenPoolerConfig(seed=3, init="default"))
    assert default.query.weight.std().item() > 0.03 and (default.output.bias != 0).all()


def test_entropy_ratio_is_relative_to_log_of_the_number_of_states():
    assert entropy_ratio(np.full(13, 1 / 13)) == pytest.approx(1.0)
    assert entropy_ratio(np.eye(7)[3]) == pytest.approx(0.0)
    w = np.array([0.5, 0.25, 0.25])
    assert entropy_ratio(w) == pytest.approx(-(w * np.log(w)).sum() / np.log(3))
    alpha = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]])  # rows: queries, columns: keys
    np.testing.assert_allclose(layer_weights(alpha), [1 / 3, 1 / 6, 1 / 2])


def _dev_score(states):
    from bertsent.evaluation.sts import cosine_rows, evaluate_sts

    def score(pooler):
        vectors, alpha = encode_states(pooler, states.s, states.t)
        index = states.index
        spearman = evaluate_sts(DEV, lambda a, b: cosine_rows(vectors[[index[x] for x in a]],
                                                              vectors[[index[x] for x in b]]))["all"]
        return spearman, entropy_ratio(layer_weights(alpha))
    return score


def test_training_moves_the_pooler_and_keeps_the_best_dev_step(states):
    config = FrozenPoolerConfig(pooling="att_both", batch_size=4, learning_rate=1e-2, steps=12, eval_every=3)
    result = train_frozen_pooler(config, states.s, states.t, *rows(states), dev_score=_dev_score(states))
    assert result.steps == 12 and [h["step"] for h in result.history] == [0, 3, 6, 9, 12]
    best = max(result.history, key=lambda h: h["dev"])
    assert result.best_step == best["step"] and result.best_dev == best["dev"]
    assert result.history[-1]["weight_change"] > 0.1  # 12 Adam steps at 1e-2 against weights of sd 0.02
    assert result.history[0]["weight_change"] == 0 and result.history[0]["loss"] is None
    assert all(0 < h["dev_entropy_ratio"] <= 1 for h in result.history)
    assert not result.pooler.training
    # the selected weights are the ones returned: their dev score is the best one
    assert _dev_score(states)(result.pooler)[0] == pytest.approx(result.best_dev)
    assert weight_change(result.pooler, result.initial) == pytest.approx(
        next(h["weight_change"] for h in result.history if h["step"] == result.best_step))


def test_a_fixed_readout_has_nothing_to_train(states):
    with pytest.raises(ValueError, match="no parameters"):
        train_frozen_pooler(FrozenPoolerConfig(pooling="cls_mean_last"), states.s, states.t, *rows(states))
    vectors, alpha = encode_states("mean_layers", states.s, states.t)
    assert alpha is None
    np.testing.assert_allclose(vectors, np.asarray(states.t).mean(axis=1), rtol=1e-6)
    vectors, _ = encode_states("concat_layers", states.s, states.t, [0, 1])
    assert vectors.shape == (2, states.n_states * states.dim)


def test_an_interrupted_run_resumes_to_the_uninterrupted_runs_weights(states, tmp_path):
    config = FrozenPoolerConfig(pooling="att_both_cls", batch_size=4, learning_rate=1e-2, steps=10, eval_every=4)
    whole = train_frozen_pooler(config, states.s, states.t, *rows(states), dev_score=_dev_score(states),
                                checkpoint=tmp_path / "whole.pt", checkpoint_every=3)
    checkpoint = tmp_path / "run.pt"
    assert train_frozen_pooler(config, states.s, states.t, *rows(states), dev_score=_dev_score(states),
                               checkpoint=checkpoint, stop_after=5) is None
    assert checkpoint.is_file()
    messages = []
    resumed = train_frozen_pooler(config, states.s, states.t, *rows(states), dev_score=_dev_score(states),
                                  checkpoint=checkpoint, log=messages.append)
    assert messages == [f"resuming at step 5 from {checkpoint}"]
    torch.testing.assert_close(resumed.pooler.state_dict(), whole.pooler.state_dict())
    assert [h["step"] for h in resumed.history] == [h["step"] for h in whole.history]
    assert [h["dev"] for h in resumed.history] == pytest.approx([h["dev"] for h in whole.history])
    assert resumed.best_step == whole.best_step
    with pytest.raises(ValueError, match="another configuration"):
        train_frozen_pooler(FrozenPoolerConfig(pooling="att_both_cls", batch_size=4, steps=11), states.s, states.t,
                            *rows(states), checkpoint=checkpoint)
