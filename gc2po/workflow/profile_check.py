"""A cluster profile's placeholder values (``CHANGE_ME_...`` in ``workflow/profiles/slurm``)
refused before any job is submitted, naming each key.

Snakemake hands a profile's ``default-resources`` and ``set-resources`` to the workflow as
resource settings; the Snakefile reads them with :func:`resource_values` and calls
:func:`install`. A dry run (``-n``) still prints its plan, with one line naming the placeholders;
a real run stops in ``onstart``, after the plan and before the scheduler submits anything.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

PLACEHOLDER = "CHANGE_ME"
PROFILE = "workflow/profiles/slurm/config.yaml"


def placeholders(
    default_resources: Mapping[str, object], set_resources: Mapping[str, Mapping[str, object]]
) -> list[str]:
    """``default-resources: slurm_account = 'CHANGE_ME_account'`` for every value that is still
    a placeholder, the profile's keys as written there (``set-resources: train: ...``)."""
    found = [
        f"default-resources: {name} = {value!r}"
        for name, value in default_resources.items()
        if isinstance(value, str) and value.startswith(PLACEHOLDER)
    ]
    for rule, values in set_resources.items():
        found += [
            f"set-resources: {rule}: {name} = {value!r}"
            for name, value in values.items()
            if isinstance(value, str) and value.startswith(PLACEHOLDER)
        ]
    return found


def message(found: list[str]) -> str:
    """One line naming the placeholders and where to fill them."""
    return (
        f"profile: placeholder value(s) {'; '.join(found)}: set your cluster's values in the "
        f"per-cluster block of {PROFILE} (docs/cluster.md) before submitting"
    )


def check(default_resources, set_resources) -> None:
    """ValueError naming every placeholder value (see :func:`message`)."""
    found = placeholders(default_resources, set_resources)
    if found:
        raise ValueError(message(found))


def resource_values(workflow) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """The profile's (or command line's) default and per-rule resources, as raw values."""
    settings = workflow.resource_settings
    default = {name: r.raw for name, r in (settings.default_resources or {}).items()}
    per_rule = {
        rule: {name: getattr(r, "raw", r) for name, r in values.items()}
        for rule, values in settings.overwrite_resources.items()
    }
    return default, per_rule


def install(workflow) -> None:
    """In the main Snakemake process: a dry run names the placeholders on stderr; a run stops
    before its first job with the same line (exit status 1)."""
    if not workflow.is_main_process:
        return
    found = placeholders(*resource_values(workflow))
    if not found:
        return
    print(f"warning: {message(found)}", file=sys.stderr)

    def refuse(log=None):
        print(f"error: {message(found)}", file=sys.stderr)
        raise SystemExit(1)

    workflow.onstart(refuse)
