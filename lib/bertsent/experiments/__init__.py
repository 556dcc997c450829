"""The book's experiments, built on the stages below: the run cache of every trained run, SG / SG-OPT, BERT
pre-training and GLUE fine-tuning (``runs``), their committed results (``store``), the SG / SG-OPT experiments
(``self_guided``), the STS tables (``sts_tables``), the geometry chapter's tables (``geometry``), what the
methods cost (``cost``), and BERT's pre-training ablations and published checkpoint (``bert_ablations``,
``bert_publish``)."""
