"""What the workflow needs of each registered method, as plain data: its ``role`` and its
``sweeps`` (``gc2po.methods.base.Method``). The workflow picks its defaults from these, never
from method names: the sweepable settings and methods (``sweep_keys``, ``sweep_methods``), the
default sweep method (the paper's), the length figure's runs and the audit's reward run
(``gc2po.workflow.report_plan``).

``method_facts`` imports the registry (and torch); the memoised check
(``gc2po.workflow.config_check``) stores its result, so an unchanged rerun reads it back.
"""

from __future__ import annotations

Facts = dict[str, dict]  # method -> {"role": str, "sweeps": [setting, ...]}, in ROLES order


def method_facts() -> Facts:
    """Method -> its role and sweeps, ordered by ``ROLES`` (the reference, the paper's, the
    corrected form, ablations, controls, baselines), registration order within a role."""
    from gc2po.methods import METHODS
    from gc2po.methods.base import ROLES

    ordered = sorted(METHODS.items(), key=lambda item: ROLES.index(item[1].role))
    return {name: {"role": m.role, "sweeps": list(m.sweeps)} for name, m in ordered}


def sweep_keys(facts: Facts) -> dict[str, tuple[str, ...]]:
    """A sweepable setting -> the methods it is swept for, in ``facts``' order."""
    keys: dict[str, tuple[str, ...]] = {}
    for name, fact in facts.items():
        for key in fact["sweeps"]:
            keys[key] = (*keys.get(key, ()), name)
    return keys


def sweep_methods(facts: Facts) -> tuple[str, ...]:
    """The methods a config's ``sweep_methods`` may name: those with sweeps."""
    return tuple(name for name, fact in facts.items() if fact["sweeps"])


def of_role(facts: Facts, role: str) -> list[str]:
    return [name for name, fact in facts.items() if fact["role"] == role]


def default_sweep_methods(facts: Facts) -> list[str]:
    """``sweep_methods`` when the config names none: the paper's method."""
    return [m for m in of_role(facts, "paper") if facts[m]["sweeps"]][:1]
