"""The arithmetic testbed (docs/testbed.md): seeded multi-step word problems, an exact
process-validity oracle, and a tiny warm-started model."""

from gc2po.testbed.generator import SPLITS, Problem, generate_splits, solution_text
from gc2po.testbed.oracle import GROUPS, OracleResult, grade

__all__ = [
    "GROUPS",
    "SPLITS",
    "OracleResult",
    "Problem",
    "generate_splits",
    "grade",
    "solution_text",
]
