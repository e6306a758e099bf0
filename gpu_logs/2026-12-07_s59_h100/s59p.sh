# session 59: the causal backward's block pairing on SMs (bwd_pairing_probe.py), and TileLang's kernel at the shape
source .tl/setup.sh >/dev/null 2>&1
export PYTHONPATH=. PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 150 python3 benchmarks/hand_variants/bwd_pairing_probe.py .tlx/examples 2>&1 | grep -v Warning | tail -30
timeout 60 env PYTHONPATH=/tmp/tlsite:. python3 benchmarks/hand_variants/bwd_causal_variants.py .tlx/examples --tilelang 2>&1 | tail -3
