"""Multi-exit BERT: a classifier ("exit") after every Transformer layer, and entropy-based early exiting.

Exit l (l = 1..L) reads layer l's final [CLS] state through its own pooler (dense + tanh, as BERT's) and a
linear classifier, with dropout between them (DeeBERT's "off-ramp"; the ACL paper does not describe its exits).
Every exit is newly initialised (BERT's own pooler is not reused: the last exit is built like the others).
The pooled state of exit l is its representation h^l for the contrastive losses and the rows of its classifier's
weight are its label embeddings l^l_k (:func:`bertsent.losses.acl_cl_loss`).

The model's ``logits`` are the last exit's, so GLUE fine-tuning's dev metric (and its checkpoint choice) reads
the full model; ``exit_logits`` holds every exit's. The training objectives over the exits (joint CE, logit KD
from the last exit, ACL-CL) are :class:`bertsent.training.aligned_contrastive.MultiExitObjective`.

Early exit (:func:`early_exit_decisions`, :meth:`MultiExitClassifier.early_exit`): an example leaves at the
first exit whose prediction entropy (natural log, nats: between 0 and ln K) is below ``threshold``; the last
exit takes every example still there. ``threshold=0`` never exits early; ``threshold > ln K`` always exits at
layer 1.
"""
from __future__ import annotations

from types import SimpleNamespace

import torch

METHOD_VERSION = 1  # bump when the maths changes


class ExitHead(torch.nn.Module):
    """One exit: [CLS] state -> pooler (dense + tanh) -> dropout -> linear classifier."""

    def __init__(self, hidden_size: int, num_labels: int, dropout: float, initializer_range: float):
        super().__init__()
        self.pooler = torch.nn.Linear(hidden_size, hidden_size)
        self.dropout = torch.nn.Dropout(dropout)
        self.classifier = torch.nn.Linear(hidden_size, num_labels)
        for linear in (self.pooler, self.classifier):
            linear.weight.data.normal_(0.0, initializer_range)
            linear.bias.data.zero_()

    def forward(self, cls_state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(pooled representation, logits)."""
        pooled = torch.tanh(self.pooler(cls_state))
        return pooled, self.classifier(self.dropout(pooled))


def prediction_entropy(logits: torch.Tensor) -> torch.Tensor:
    """The entropy (nats) of softmax(logits) over the last dimension."""
    log_probabilities = torch.log_softmax(logits.float(), dim=-1)
    return -(log_probabilities.exp() * log_probabilities).sum(dim=-1)


def early_exit_decisions(exit_logits: torch.Tensor, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Entropy-based early exit from every exit's logits: (predictions (N,), layers used (N,), 1-based).

    Args:
        exit_logits: (L, N, K), exit l's logits for every example (an example's decision depends on its own row
            only, so the answer is what running the layers one by one and stopping would give).
        threshold: leave at the first exit with entropy < threshold (nats); the last exit takes the rest.
    """
    if exit_logits.dim() != 3:
        raise ValueError(f"exit_logits must be (exits, examples, classes); got shape {tuple(exit_logits.shape)}. "
                         f"Fix: stack every exit's (N, K) logits along a first dimension.")
    exits = exit_logits.shape[0]
    confident = prediction_entropy(exit_logits) < threshold  # (L, N)
    confident[-1] = True
    first = confident.int().argmax(dim=0)  # index of the first True
    predictions = exit_logits.argmax(dim=-1).gather(0, first[None]).squeeze(0)
    return predictions, first + 1 if exits else first


class MultiExitClassifier(torch.nn.Module):
    """A BERT with an :class:`ExitHead` after each of its L layers (see the module docstring).

    ``forward`` returns ``logits`` (the last exit's, (N, K)), ``exit_logits`` (L, N, K), ``exit_features``
    (L, N, d: each exit's pooled representation) and, given labels, ``loss``: the mean over exits of their
    cross-entropies (the "joint" objective).
    """

    base_model_prefix = "bert"  # the pre-trained encoder, as transformers' models name theirs (the rest: the exits)

    def __init__(self, model_path: str, num_labels: int = 2):
        from transformers import AutoConfig, AutoModel

        super().__init__()
        config = AutoConfig.from_pretrained(model_path)
        if getattr(config, "is_decoder", False):
            raise ValueError(f"{model_path} is a left-to-right model; multi-exit classifiers read [CLS], which such "
                             f"a model leaves blind. Fix: use a bidirectional BERT.")
        self.bert = AutoModel.from_pretrained(model_path, add_pooling_layer=False)
        dropout = getattr(config, "classifier_dropout", None) or config.hidden_dropout_prob
        self.exits = torch.nn.ModuleList(
            ExitHead(config.hidden_size, num_labels, dropout, config.initializer_range)
            for _ in range(config.num_hidden_layers))

    @property
    def num_exits(self) -> int:
        return len(self.exits)

    def _layerwise(self) -> bool:
        bert = self.bert
        return hasattr(bert, "embeddings") and hasattr(bert, "_create_attention_masks") and hasattr(
            getattr(bert, "encoder", None), "layer")

    def _start(self, input_ids, attention_mask, token_type_ids):
        """The embedding output and the attention mask the layers take (a BERT-family model)."""
        embedded = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        mask, _ = self.bert._create_attention_masks(attention_mask=attention_mask, encoder_attention_mask=None,
                                                    embedding_output=embedded, encoder_hidden_states=None, cache=None)
        return embedded, mask

    def cls_states(self, input_ids, attention_mask, token_type_ids=None) -> list[torch.Tensor]:
        """Layer l's [CLS] state for l = 1..L."""
        if self._layerwise():
            hidden, mask = self._start(input_ids, attention_mask, token_type_ids)
            states = []
            for layer in self.bert.encoder.layer:
                hidden = layer(hidden, mask)
                hidden = hidden[0] if isinstance(hidden, tuple) else hidden
                states.append(hidden[:, 0])
            return states
        kwargs = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        output = self.bert(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **kwargs)
        return [hidden[:, 0] for hidden in output.hidden_states[1:]]

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        pooled, logits = zip(*(head(state) for head, state in
                               zip(self.exits, self.cls_states(input_ids, attention_mask, token_type_ids))))
        exit_logits = torch.stack(logits)
        loss = None
        if labels is not None:
            loss = torch.stack([torch.nn.functional.cross_entropy(z, labels) for z in exit_logits]).mean()
        return SimpleNamespace(loss=loss, logits=exit_logits[-1], exit_logits=exit_logits,
                               exit_features=torch.stack(pooled))

    @torch.no_grad()
    def early_exit(self, input_ids, attention_mask, token_type_ids=None, threshold: float = 0.1):
        """Run the layers one by one and stop each example at its first exit with entropy < ``threshold``.

        Examples that have left are dropped from the batch, so later layers run on the rest only (with a batch
        of one, the time is that of the layers the example used). Returns (predictions (N,), layers used (N,)),
        equal to :func:`early_exit_decisions` on the full ``exit_logits``.
        """
        if not self._layerwise():
            raise ValueError(f"early_exit runs the layers one by one, which needs a BERT-family encoder "
                             f"(embeddings + encoder.layer); this one is {type(self.bert).__name__}. Fix: use "
                             f"early_exit_decisions(model(...).exit_logits, threshold) (accuracy and layers, no "
                             f"time saved).")
        hidden, mask = self._start(input_ids, attention_mask, token_type_ids)
        size = input_ids.shape[0]
        predictions = torch.full((size,), -1, dtype=torch.long, device=input_ids.device)
        layers_used = torch.zeros(size, dtype=torch.long, device=input_ids.device)
        remaining = torch.arange(size, device=input_ids.device)
        for index, (layer, head) in enumerate(zip(self.bert.encoder.layer, self.exits)):
            hidden = layer(hidden, mask)
            hidden = hidden[0] if isinstance(hidden, tuple) else hidden
            _, logits = head(hidden[:, 0])
            leaving = prediction_entropy(logits) < threshold
            if index == len(self.exits) - 1:
                leaving = torch.ones_like(leaving)
            predictions[remaining[leaving]] = logits[leaving].argmax(-1)
            layers_used[remaining[leaving]] = index + 1
            staying = ~leaving
            if not staying.any():
                break
            remaining, hidden = remaining[staying], hidden[staying]
            mask = mask[staying] if mask is not None and mask.dim() > 0 and mask.shape[0] == staying.shape[0] else mask
        return predictions, layers_used
