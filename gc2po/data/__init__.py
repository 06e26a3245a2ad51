"""Benchmark and training-set loaders: Hub ids or local mirrors -> normalised records
``{id, source, question, answer, meta}``."""

from gc2po.data.benchmarks import BENCHMARKS, Benchmark, load_benchmark, register
from gc2po.data.output import write_normalised

__all__ = ["BENCHMARKS", "Benchmark", "load_benchmark", "register", "write_normalised"]
