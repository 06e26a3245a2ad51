"""Evaluation: generation backends, graders, sandboxed code execution, metrics."""
