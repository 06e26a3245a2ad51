"""The workflow config check is memoised: an unchanged config, schema, package and libraries
reuse the last result (a no-op rerun imports neither TRL nor torch); any change checks again,
and a bad config is never remembered as good."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gc2po.workflow import config_check
from gc2po.workflow.config_files import load_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "gc2po" / "workflow" / "config.schema.yaml"


def test_the_key_follows_the_config_the_schema_and_the_source(tmp_path, monkeypatch):
    config = load_config([ROOT / "config" / "config.yaml"])
    key = config_check.check_key(config, SCHEMA)
    assert config_check.check_key(json.loads(json.dumps(config)), SCHEMA) == key
    changed = json.loads(json.dumps(config))
    changed["train"]["trainer"]["lambda_cf"] = 0.5
    assert config_check.check_key(changed, SCHEMA) != key
    other_schema = tmp_path / "schema.yaml"
    other_schema.write_bytes(SCHEMA.read_bytes() + b"\n# another schema\n")
    assert config_check.check_key(config, other_schema) != key
    package = tmp_path / "gc2po"  # the same package with one source byte changed
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.setattr(config_check.gc2po, "__file__", str(package / "__init__.py"))
    first = config_check.check_key(config, SCHEMA)
    (package / "__init__.py").write_text("# changed\n")
    assert config_check.check_key(config, SCHEMA) != first


def test_a_hit_skips_the_check_and_a_bad_config_is_not_remembered(tmp_path, monkeypatch):
    config = load_config([ROOT / "config" / "config.yaml"])
    cache = tmp_path / ".snakemake" / "gc2po" / "config_check.json"
    names = config_check.checked(config, None, SCHEMA, cache)["display_names"]
    assert names["gc2po_add"] == "GC2PO (corrected, additive)"
    assert json.loads(cache.read_text())["key"] == config_check.check_key(config, SCHEMA)

    def no_check(*args, **kwargs):
        raise AssertionError("checked again")

    monkeypatch.setattr("gc2po.workflow.plan.validate", no_check)
    assert config_check.checked(config, None, SCHEMA, cache)["display_names"] == names
    monkeypatch.undo()
    bad = json.loads(json.dumps(config))
    bad["train"]["trainer"]["lambda_cf"] = 200.0  # the range is [0, 100]
    with pytest.raises(ValueError, match="lambda_cf"):
        config_check.checked(bad, None, SCHEMA, cache)
    with pytest.raises(ValueError, match="lambda_cf"):  # still refused: not remembered
        config_check.checked(bad, None, SCHEMA, cache)


@pytest.mark.slow
def test_a_rerun_of_the_workflow_parse_imports_neither_trl_nor_torch(tmp_path):
    """Snakemake's own process after a first parse: the check is read back, so neither library
    is loaded (the no-op timing of docs/measurements.md depends on it)."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['snakemake', '-n', '-q', '-d', sys.argv[1]]\n"
        "try:\n"
        "    runpy.run_module('snakemake', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in ('trl', 'torch') if m in sys.modules))\n"
    )
    for _ in range(2):  # the first parse checks and records, the second reads back
        out = subprocess.run(
            [sys.executable, "-c", probe, str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "LOADED" in out.stdout, out.stderr[-2000:]
    assert "LOADED []" in out.stdout, out.stdout[-500:]
