"""BERT for pre-training at three small sizes, with the masked-LM output computed only where it is needed."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForPreTraining

from ..data.masking import IGNORE_INDEX

METHOD_VERSION = 1  # bump when the maths changes

# (layers, hidden size); heads = hidden / 64 and feed-forward = 4 x hidden, as BERT-base and the
# miniature BERTs of Turc et al. (2019) use
BERT_SIZES = {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512), "medium": (8, 512), "base": (12, 768)}
# "mlm_nsp": BERT; "mlm": the no-NSP ablation; "ltr": a left-to-right language model without NSP (the
# paper's "LTR & No NSP", Table 5)
OBJECTIVES = ("mlm_nsp", "mlm", "ltr")
ATTENTION_KERNELS = ("sdpa", "eager")


def bert_config(size: str, vocab_size: int = 30522, max_position_embeddings: int = 512,
                left_to_right: bool = False) -> BertConfig:
    """A ``transformers`` BERT configuration of a named size (see :data:`BERT_SIZES`).

    ``left_to_right``: every position attends only to itself and the positions before it (``is_decoder``),
    in pre-training and in every later use of the saved model, as the paper's LTR model keeps its left-only
    constraint when fine-tuned.
    """
    if size not in BERT_SIZES:
        raise ValueError(f"Unknown BERT size {size!r}; choose one of {', '.join(BERT_SIZES)}")
    layers, hidden = BERT_SIZES[size]
    return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden,
                      max_position_embeddings=max_position_embeddings, is_decoder=left_to_right,
                      use_cache=False)


class BertForMaskedPretraining(BertForPreTraining):
    """BERT's two pre-training heads; the vocabulary projection runs only at the masked positions.

    With 15% of tokens masked, projecting every position onto the 30,522-word vocabulary would spend
    most of the head's work on outputs the loss ignores. The weights (and names) are those of
    ``BertForPreTraining``, so ``AutoModel.from_pretrained`` reads a saved checkpoint as a plain BERT.

    ``forward`` returns a dict with ``loss`` (MLM loss, plus NSP loss when ``next_sentence_label`` is
    given), ``mlm_loss``, ``nsp_loss``, ``mlm_count``, ``nsp_correct`` / ``nsp_count`` and, in eval mode only,
    ``mlm_correct`` and the predictions (``mlm_predicted``, ``mlm_input``, ``mlm_target``).
    """

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None,
                next_sentence_label=None, **_):
        encoded = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        masked = labels != IGNORE_INDEX
        logits = self.cls.predictions(encoded.last_hidden_state[masked])
        targets = labels[masked]
        mlm_loss = F.cross_entropy(logits.float(), targets)
        out = {"mlm_loss": mlm_loss, "loss": mlm_loss, "mlm_count": targets.numel()}
        # the predictions are for evaluation: in training, an argmax over the 30,522 logits of every masked
        # position costs about a tenth of a CPU step and nothing reads it
        if not self.training:
            predicted = logits.argmax(-1)
            out.update(mlm_correct=(predicted == targets).sum(), mlm_predicted=predicted,
                       mlm_input=input_ids[masked], mlm_target=targets)
        if next_sentence_label is not None:
            nsp_logits = self.cls.seq_relationship(encoded.pooler_output)
            nsp_loss = F.cross_entropy(nsp_logits.float(), next_sentence_label)
            out.update(nsp_loss=nsp_loss, loss=mlm_loss + nsp_loss, nsp_count=next_sentence_label.numel(),
                       nsp_correct=(nsp_logits.argmax(-1) == next_sentence_label).sum())
        return out


class BertForLeftToRightPretraining(BertForPreTraining):
    """A left-to-right language model with BERT's body and output layer: the paper's "LTR & No NSP" ablation.

    Attention is causal (``config.is_decoder``), so the state at position t has seen tokens 1..t only and
    predicts token t+1:

        L_LTR = -(1/|T|) sum over t in T of log p(x_{t+1} | x_1 .. x_t)

    where T are the positions whose next token is a word piece (``labels`` holds that next token there and
    :data:`IGNORE_INDEX` elsewhere: see :func:`~bertsent.data.masking.next_token_labels`). The NSP
    head is kept (unused) so the weights have ``BertForPreTraining``'s names and load as a plain BERT.

    ``forward`` returns a dict with ``loss``, ``ltr_loss``, ``ltr_correct`` and ``ltr_count``.
    """

    def __init__(self, config: BertConfig):
        if not config.is_decoder:
            raise ValueError("A left-to-right model needs a causal configuration: bert_config(..., left_to_right=True)")
        super().__init__(config)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **_):
        encoded = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                            use_cache=False)
        predicted = labels != IGNORE_INDEX
        logits = self.cls.predictions(encoded.last_hidden_state[predicted])
        targets = labels[predicted]
        loss = F.cross_entropy(logits.float(), targets)
        return {"loss": loss, "ltr_loss": loss, "ltr_correct": (logits.argmax(-1) == targets).sum(),
                "ltr_count": targets.numel()}


def new_pretraining_model(size: str, vocab_size: int = 30522, seed: int = 0, objective: str = "mlm_nsp",
                          dropout: float = 0.1, attention: str = "sdpa"
                          ) -> BertForMaskedPretraining | BertForLeftToRightPretraining:
    """A randomly initialised model for ``objective`` (BERT's initialisation: normal(0, 0.02)).

    ``attention``: ``transformers``' attention kernel, ``"sdpa"`` or ``"eager"`` (the same maths; on a CPU in bf16
    the eager one's backward is faster at length 128: ``benchmarks/pretraining_throughput.py``)."""
    if attention not in ATTENTION_KERNELS:
        raise ValueError(f"Unknown attention kernel {attention!r}; choose one of {', '.join(ATTENTION_KERNELS)}")
    if objective not in OBJECTIVES:
        raise ValueError(f"Unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    torch.manual_seed(seed)
    if objective == "ltr":
        config = bert_config(size, vocab_size, left_to_right=True)
    else:
        config = bert_config(size, vocab_size)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = dropout
    config._attn_implementation = attention
    return (BertForLeftToRightPretraining if objective == "ltr" else BertForMaskedPretraining)(config)
