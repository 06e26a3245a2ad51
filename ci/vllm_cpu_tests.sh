#!/usr/bin/env bash
# The opt-in vLLM step of CI: builds .venv-vllm (ci/vllm_cpu_env.sh) and runs the tests marked
# vllm_cpu there. Wall time on the 2-core CI machine: docs/measurements.md.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash ci/vllm_cpu_env.sh
# one OpenMP thread for the in-process engine (80 -> 2000 tokens/s on 2 shared cores), no core
# pinning, a 1 GiB KV cache instead of vLLM's share-of-RAM default
export OMP_NUM_THREADS=1 VLLM_CPU_OMP_THREADS_BIND=nobind VLLM_CPU_KVCACHE_SPACE=1
export PYTHONPATH=$PWD
# one pytest process (-n 0): two in-process engines side by side would share the 2 cores and RAM,
# and the step's recorded wall time is of one
.venv-vllm/bin/python -m pytest -q -p no:cacheprovider -n 0 -m vllm_cpu tests/vllm_cpu "$@"
echo "vLLM CPU step: $((SECONDS - start)) s"
