"""Masked-LM accuracy that means something: split by what the model saw at each predicted position.

BERT's masking chooses 15% of word pieces and shows the model, at a chosen position, either ``[MASK]``
(80%), a random word piece (10%) or the original token unchanged (10%). One pooled accuracy hides what was
learned: at *unchanged* positions copying the input is right, so a model that has learned nothing but
"copy the input unless it is [MASK]" already scores about 10 points. This module reports accuracy per
position type beside two floors:

* **majority token**: always predict the most frequent word piece of the training text (a unigram model's
  top-1 guess), scored on the same positions;
* **copy the input**: predict the token the model was shown (100% at unchanged positions, 0% at [MASK]);
* **best constant**: the one word piece that is right most often on the evaluated positions themselves (an
  oracle's constant guess, e.g. "." on STS-B sentences, where the corpus's "," is rare).

A model has learned language when its accuracy *at [MASK] positions* clears the majority floor by a margin.

``python -m bertsent.evaluation.mlm MODEL_DIR`` prints the table for a saved checkpoint on held-out corpus
text and on STS-B test sentences (text the corpus never saw), and the top-5 predictions for probe sentences.
"""
from __future__ import annotations

import argparse
from collections.abc import Iterable

import numpy as np
import pandas as pd
import torch

METHOD_VERSION = 1  # bump when the maths changes

POSITION_TYPES = ("mask", "random", "unchanged")
PROBE_SENTENCES = (
    "The capital of France is [MASK].",
    "She poured a cup of [MASK] and sat down.",
    "He was born in 1950 and [MASK] in 2010.",
    "The river flows into the [MASK] sea.",
    "Paris is the largest [MASK] in France.",
    "The [MASK] barked at the cat.",
    "They played football in the [MASK].",
    "I would like to [MASK] a book.",
)


def position_types(shown: torch.Tensor, targets: torch.Tensor, mask_token_id: int) -> torch.Tensor:
    """The type of each predicted position: 0 = shown ``[MASK]``, 1 = shown a random word piece,
    2 = shown the original token unchanged.

    ``shown`` and ``targets`` hold, for the predicted positions only, the id the model was given and the id
    it must predict. A random replacement that happens to draw the original token counts as unchanged: the
    model sees exactly what an unchanged position shows it.
    """
    kinds = torch.full_like(targets, 1)
    kinds[shown == targets] = 2
    kinds[shown == mask_token_id] = 0
    return kinds


def accuracy_by_position_type(predicted, shown, targets, mask_token_id: int, majority_token: int) -> pd.DataFrame:
    """Accuracy at each position type beside the majority-token and copy-the-input floors.

    All arguments but the ids are 1-D tensors over the predicted positions. Returns one row per position
    type (and ``all``) with ``count``, ``accuracy``, ``majority_floor``, ``best_constant_floor``, ``copy_floor``.
    ``predicted=None``
    gives the floors alone (``accuracy`` left empty).
    """
    shown, targets = (torch.as_tensor(x).reshape(-1) for x in (shown, targets))
    predicted = torch.full_like(targets, -1) if predicted is None else torch.as_tensor(predicted).reshape(-1)
    kinds = position_types(shown, targets, mask_token_id)
    rows = []
    for name, where in [(n, kinds == i) for i, n in enumerate(POSITION_TYPES)] + [("all", torch.ones_like(kinds, dtype=torch.bool))]:
        count = int(where.sum())
        rate = (lambda hits: float(hits.sum()) / count if count else float("nan"))
        rows.append({"positions": name, "count": count,
                     "accuracy": rate(predicted[where] == targets[where]) if (predicted >= 0).any() else float("nan"),
                     "majority_floor": rate(targets[where] == majority_token),
                     "best_constant_floor": (float(torch.bincount(targets[where]).max()) / count if count
                                             else float("nan")),
                     "copy_floor": rate(shown[where] == targets[where])})
    return pd.DataFrame(rows)


def majority_token(token_ids: np.ndarray, first_word_piece: int = 0) -> int:
    """The most frequent id among ``token_ids`` at or above ``first_word_piece`` (special tokens are never
    prediction targets)."""
    counts = np.bincount(np.asarray(token_ids, dtype=np.int64))
    counts[:first_word_piece] = 0
    return int(counts.argmax())


def masked_positions(batches: Iterable[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """(shown, target) ids at every predicted position of pre-masked batches."""
    batches = list(batches)
    chosen = [b["labels"] != -100 for b in batches]
    return (torch.cat([b["input_ids"][c] for b, c in zip(batches, chosen)]),
            torch.cat([b["labels"][c] for b, c in zip(batches, chosen)]))


@torch.no_grad()
def predict_masked(model, batches: Iterable[dict]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run a masked-LM model (``BertForPreTraining``-like: ``.bert`` and ``.cls.predictions``) over pre-masked
    batches (``input_ids``, ``attention_mask``, ``token_type_ids``, ``labels`` with -100 where nothing is
    predicted) and return (predicted, shown, target) ids at every predicted position."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    predicted, shown, targets = [], [], []
    for batch in batches:
        labels = batch["labels"]
        chosen = labels != -100
        encoded = model.bert(input_ids=batch["input_ids"].to(device),
                             attention_mask=batch["attention_mask"].to(device),
                             token_type_ids=batch.get("token_type_ids", torch.zeros_like(labels)).to(device))
        logits = model.cls.predictions(encoded.last_hidden_state[chosen.to(device)])
        predicted.append(logits.argmax(-1).cpu())
        shown.append(batch["input_ids"][chosen])
        targets.append(labels[chosen])
    model.train(was_training)
    return torch.cat(predicted), torch.cat(shown), torch.cat(targets)


@torch.no_grad()
def probe_predictions(model, tokenizer, sentences=PROBE_SENTENCES, k: int = 5) -> pd.DataFrame:
    """Top-``k`` word pieces the model puts at each ``[MASK]`` of each probe sentence."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    rows = []
    for sentence in sentences:
        encoded = tokenizer(sentence.replace("[MASK]", tokenizer.mask_token), return_tensors="pt").to(device)
        hidden = model.bert(**encoded).last_hidden_state[0]
        for position in (encoded["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten().tolist():
            top = model.cls.predictions(hidden[position:position + 1])[0].topk(k).indices.tolist()
            rows.append({"sentence": sentence, "top_predictions": " ".join(tokenizer.convert_ids_to_tokens(top))})
    model.train(was_training)
    return pd.DataFrame(rows)


@torch.no_grad()
def word_order_use(model, tokenizer, sentences: list[str], seed: int = 0, min_pieces: int = 8) -> dict:
    """Does an encoder use word order? Two measures on real sentences, both near their "no" end for a bag-of-words
    model (one that reads which words are in the context but not where):

    - ``shuffled_state_cosine``: each word piece's last-layer state with the sentence as written against its state
      when the other word pieces are shuffled (seeded; [CLS] and [SEP] stay put), as the mean cosine over word
      pieces. 1 means the state ignores order.
    - ``neighbour_attention``: per layer, the largest mean attention any head gives to the token just before or just
      after a position, against ``uniform_attention`` (1 / the mean sentence length): a head that tracks neighbours,
      as trained BERTs have from early on, scores far above uniform.

    ``model``: a ``transformers`` encoder (or a model with ``.bert``) loaded with ``attn_implementation="eager"``.
    """
    encoder = getattr(model, "bert", model).eval()
    rng = np.random.default_rng(seed)
    cosines, neighbour, lengths = [], None, []
    for sentence in sentences:
        ids = tokenizer(sentence, return_tensors="pt", truncation=True, max_length=128)["input_ids"]
        n = ids.shape[1] - 2
        if n < min_pieces:
            continue
        order = rng.permutation(n)
        shuffled = ids.clone()
        shuffled[0, 1:-1] = ids[0, 1:-1][torch.from_numpy(order)]
        written = encoder(input_ids=ids, output_attentions=True)
        moved = encoder(input_ids=shuffled).last_hidden_state[0, 1:-1]
        # the piece at written position order[j] sits at shuffled position j
        states = written.last_hidden_state[0, 1:-1][torch.from_numpy(order)]
        cosines.append(torch.nn.functional.cosine_similarity(states, moved, dim=-1).mean().item())
        per_layer = []
        for attention in written.attentions:  # (1, heads, length, length)
            before = torch.diagonal(attention[0], -1, -2, -1).mean(-1)
            after = torch.diagonal(attention[0], 1, -2, -1).mean(-1)
            per_layer.append(torch.maximum(before, after).max().item())
        neighbour = np.array(per_layer) if neighbour is None else neighbour + np.array(per_layer)
        lengths.append(n + 2)
    if not cosines:
        raise ValueError(f"No sentence has {min_pieces} word pieces or more. Fix: pass longer sentences.")
    return {"sentences": len(cosines), "shuffled_state_cosine": float(np.mean(cosines)),
            "neighbour_attention": (neighbour / len(cosines)).round(4).tolist(),
            "uniform_attention": float(1 / np.mean(lengths))}


def heldout_corpus_batches(tokenizer, pairs: int = 2048, files=None, corpus_dir=None, cache_dir=None, seed: int = 0,
                           batch_size: int = 128) -> list[dict]:
    """Fixed, pre-masked batches of held-out corpus pairs (the same ones pre-training evaluates on)."""
    from ..data.pretraining_pairs import corpus_instances
    from ..training.pretraining import PairBatches

    heldout = PairBatches(corpus_instances(tokenizer, "heldout", files=files, corpus_dir=corpus_dir,
                                           cache_dir=cache_dir, seed=seed), tokenizer, batch_size, seed, True)
    return heldout.evaluation_batches(pairs, seed)


def sentence_batches(sentences: list[str], tokenizer, seed: int = 0, batch_size: int = 128) -> list[dict]:
    """Single sentences as ``[CLS] s [SEP]`` with 15% of their word pieces chosen and corrupted as in
    pre-training (80/10/10), for text the corpus never saw."""
    from ..data.masking import FIRST_WORD_PIECE, mask_tokens

    batches = []
    for start in range(0, len(sentences), batch_size):
        encoded = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True, max_length=128,
                            return_tensors="pt")
        ids = encoded["input_ids"]
        candidates = (ids >= FIRST_WORD_PIECE) & (encoded["attention_mask"] == 1)
        generator = torch.Generator().manual_seed(seed * 1_000_003 + start)
        corrupted, labels = mask_tokens(ids, candidates, tokenizer.mask_token_id, (FIRST_WORD_PIECE, len(tokenizer)),
                                        generator)
        batches.append({"input_ids": corrupted, "attention_mask": encoded["attention_mask"],
                        "token_type_ids": torch.zeros_like(ids), "labels": labels})
    return batches


def evaluate_checkpoint(model_dir, pairs: int = 2048, corpus_dir=None, cache_dir=None, data_dir=None,
                        files=None) -> dict[str, pd.DataFrame]:
    """The position-type table on held-out corpus text and on STS-B test sentences, and the probe table,
    for a saved ``BertForPreTraining`` checkpoint. The majority token is that of the training text."""
    from transformers import AutoModelForPreTraining, AutoTokenizer

    from ..data.masking import FIRST_WORD_PIECE
    from ..data.pretraining_pairs import corpus_instances
    from ..data.sts import load_stsb

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForPreTraining.from_pretrained(model_dir, dtype=torch.float32)
    train = corpus_instances(tokenizer, "train", files=files, corpus_dir=corpus_dir, cache_dir=cache_dir)
    majority = majority_token(train.tokens, FIRST_WORD_PIECE)
    tables = {}
    for text, batches in (
            ("held-out corpus", heldout_corpus_batches(tokenizer, pairs, files, corpus_dir, cache_dir)),
            ("STS-B test sentences", sentence_batches(load_stsb("test", data_dir).sentences(), tokenizer))):
        table = accuracy_by_position_type(*predict_masked(model, batches), tokenizer.mask_token_id, majority)
        tables[text] = table.assign(text=text, majority_token=tokenizer.convert_ids_to_tokens(majority))
    return {"accuracy": pd.concat(tables.values(), ignore_index=True), "probes": probe_predictions(model, tokenizer)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Masked-LM accuracy of a saved BERT by position type, with floors.")
    parser.add_argument("model_dir")
    parser.add_argument("--pairs", type=int, default=2048, help="held-out corpus pairs (default 2048)")
    parser.add_argument("--corpus-dir", default=None)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--files", nargs="*", default=None, help="corpus files (default: every file)")
    args = parser.parse_args(argv)
    result = evaluate_checkpoint(args.model_dir, args.pairs, args.corpus_dir, data_dir=args.data_dir, files=args.files)
    with pd.option_context("display.width", 140, "display.float_format", "{:.4f}".format):
        print(result["accuracy"].to_string(index=False))
        print()
        print(result["probes"].to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
