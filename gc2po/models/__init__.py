"""Tokenizers, small local models, grouped sampling and GGUF conversion: the model-side tools that
training, evaluation and the testbed share."""
