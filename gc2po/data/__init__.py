"""Benchmark and training-set loaders: Hub ids or local mirrors -> normalised records
``{id, source, question, answer, meta}``."""

from gc2po.data.benchmarks import BENCHMARKS, load_benchmark, write_normalised

__all__ = ["BENCHMARKS", "load_benchmark", "write_normalised"]
