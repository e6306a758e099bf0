#!/usr/bin/env bash
# Type-check the documented TileLang style: pyright in basic mode over examples/ and over the
# README's Python snippets (and any FILE given), against the tile2triton that Python finds
# installed (the README's `pip install -e ".[test]"`, or a wheel): no extraPaths, so an install
# pyright cannot follow fails here as it would for a user. Its T stub:
# tile2triton/language/__init__.pyi.
#
# The README's snippets are checked as one session, in order (a later snippet may use an earlier
# one's names), in a file whose line numbers are the README's; code blocks that show generated
# Triton (they contain "@triton.jit") are output, not user code, and are skipped.
#
#   tools/typecheck.sh [FILE...]          # exit 0 when pyright reports no errors
#   PYRIGHT="npx pyright" tools/typecheck.sh
#   T2T_PYTHON=venv/bin/python tools/typecheck.sh   # the tile2triton installed in that environment
#
# pyright: npm install -g pyright (or pip install pyright).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pyright="${PYRIGHT:-pyright}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

python3 - "$root/README.md" "$tmp/README_snippets.py" <<'EOF'
import re
import sys

readme, out = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().splitlines()
code = [""] * len(lines)  # README line k -> line k of the snippet file (blank outside snippets)
k = 0
while k < len(lines):
    if re.fullmatch(r"```python\s*", lines[k]):
        end = next(j for j in range(k + 1, len(lines)) if lines[j].startswith("```"))
        block = lines[k + 1 : end]
        if not any("@triton.jit" in line for line in block):
            code[k + 1 : end] = block
        k = end
    k += 1
open(out, "w", encoding="utf-8").write("\n".join(code) + "\n")
EOF

cat > "$tmp/pyrightconfig.json" <<EOF
{
  "typeCheckingMode": "basic"
}
EOF

python="${T2T_PYTHON:-$(command -v python3)}"
# examples that import tilelang itself are TileLang scripts (for `tile2triton run`), not checked here
mapfile -t examples < <(grep -L -E '^import tilelang' "$root"/examples/*.py)
status=0
$pyright -p "$tmp/pyrightconfig.json" --pythonpath "$python" "${examples[@]}" "$tmp/README_snippets.py" "$@" 2>&1 | sed "s|$tmp/README_snippets.py|$root/README.md|g" || status=$?
exit $status
