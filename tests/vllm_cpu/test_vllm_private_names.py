"""vLLM's internals that the CPU weight sync uses (tests/test_private_names.py lists them) still
exist on a real engine with the arguments the code passes. Run by ci/vllm_cpu_tests.sh."""

from __future__ import annotations

import pytest

from tests.test_private_names import PINNED, package_sources, pin_problems, scan, vllm_problems
from tests.training.conftest import make_trainer

pytestmark = pytest.mark.vllm_cpu


def test_vllm_internals_hold_on_a_colocated_engine(
    vllm_model_dir, testbed_train_file, tmp_path, monkeypatch
):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    trainer = make_trainer(
        vllm_model_dir,
        testbed_train_file,
        tmp_path / "run",
        "grpo",
        use_vllm=True,
        vllm_mode="colocate",
        max_steps=1,
        per_device_train_batch_size=4,
        max_completion_length=12,
    )
    assert vllm_problems(trainer.vllm_generation.llm) == []


def test_the_pinned_library_names_hold_in_the_vllm_environment():
    """The same TRL/transformers pins (VLLMGeneration._iter_named_params included) with the
    library versions of .venv-vllm."""
    assert pin_problems(PINNED, scan(package_sources())) == []
