#!/usr/bin/env bash
# Builds .tl (git-ignored): what a device call carries (`carry [".tl"]`) to run real TileLang beside
# tile2triton on the GPU machine, which has no network:
#   .tl/site.tar.xz    TileLang 0.1.15's wheel set (WHEELS_SCRIPT, default ../shared/tools/tilelang-wheels.sh),
#                      unzipped and xz-compressed (about 36 MB: the wheels themselves no longer fit the 64 MiB
#                      a call carries beside the working tree)
#   .tl/tl_src.tar.xz  TileLang's examples/ from a checkout (all the regression suite reads; about 3 MB)
#   .tl/setup.sh       sourced there from the repo root: unpacks both (.tlx/examples, /tmp/tlsite), links
#                      libz3.so and puts CUDA's tools on PATH
# Usage, from the repo root: bash tools/carry_tilelang.sh TILELANG_CHECKOUT [WHEELS_SCRIPT]
# Then on the device: source .tl/setup.sh && bash tools/gpu_pending_checks.sh .tlx /tmp/tlsite $OUT "tests 3/3"
# (a TileLang checkout: `git --git-dir=MIRROR archive HEAD | tar x -C DIR` of github:tile-ai/tilelang).
set -euo pipefail
checkout=$(realpath "$1")
wheels_script=${2:-../shared/tools/tilelang-wheels.sh}
[ -d "$checkout/examples" ] || { echo "no examples/ in $checkout" >&2; exit 1; }
work=$(mktemp -d)
mkdir -p .tl
[ -n "$(ls .whl/*.whl 2>/dev/null)" ] || DEST=.whl bash "$wheels_script"
for w in .whl/*.whl; do unzip -q -o "$w" -d "$work/site"; done
tar cf - -C "$work/site" . | xz -6 -T0 > .tl/site.tar.xz
tar cf - -C "$checkout" examples | xz -6 -T0 > .tl/tl_src.tar.xz
cat > .tl/setup.sh <<'EOF'
# sourced on the GPU machine from the repo root (tools/carry_tilelang.sh made it)
mkdir -p .tlx /tmp/tlsite
[ -d .tlx/examples ] || tar xJf .tl/tl_src.tar.xz -C .tlx
[ -d /tmp/tlsite/tilelang ] || tar xJf .tl/site.tar.xz -C /tmp/tlsite
ln -sf libz3.so.4.15 /tmp/tlsite/z3/lib/libz3.so
export PATH=$PATH:/usr/local/cuda/bin CUDA_HOME=/usr/local/cuda
EOF
rm -rf "$work"
ls -la .tl
