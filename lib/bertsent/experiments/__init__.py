"""The book's experiments, built on the stages below: the SG / SG-OPT run cache (``runs``) and experiments
(``self_guided``), the STS tables (``sts_tables``), the geometry chapter's tables (``geometry``), what the
methods cost (``cost``), and BERT's pre-training ablations and published checkpoint (``bert_ablations``,
``bert_publish``)."""
