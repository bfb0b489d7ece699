"""The NLP domain: attentive text classification and sequence-to-sequence translation.

* ``data``: generated defaults (dates -> ISO dates, reviews) and readers of Multi30k, TREC
  and any labelled corpus; one ``tokenizers`` tokeniser per run, trained on the training split.
* ``models``: the self-attentive sentence embedding, the hierarchical attention network, a
  Transformer classifier; a recurrent encoder-decoder with Bahdanau or Luong attention and
  a Transformer encoder-decoder.
* ``tasks``: ``TextClassification`` and ``Translation`` (their checkpoints carry the tokeniser).
* ``decoding``: greedy and beam search; ``metrics``; ``pictures``: alignments and highlights.

Configs: ``domains/nlp/*.yaml``.
"""
