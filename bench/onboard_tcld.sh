#!/usr/bin/env bash
# bench/onboard_tcld.sh [BUILD] — issue 21 item 2 through tcld and tclctl: the H100 pool measured by
# tcl-measure (tests/data/gpu-h100) onboarded into a lineage whose base knows gpu-v100, rdu against
# random at 10% in two rounds (SEEDS seeds, default 3), the whole pool and zero-shot, each version
# scored on 30% of the H100's tasks held out (bench/onboard_tcld.py says how). A throwaway PostgreSQL
# and tcld (bench/lib/stack.sh); jobs train where tcld trains (--train-device auto).
#   bench/onboard_tcld.sh build        (after cmake --build build --target tcld tclctl)
# Environment: OUT (default /tmp/onboard-tcld), SEEDS, DATA (default ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
data=${DATA:-$(cd .. && pwd)/shared/data}
source bench/lib/stack.sh
trap stack_stop EXIT
stack_start "$build"
export TCL_URL=$base_url TCL_TOKEN=$token TCLCTL=$build/tools/tclctl
python3 bench/onboard_tcld.py --out "${OUT:-/tmp/onboard-tcld}" --seeds "${SEEDS:-3}" \
  --base-platform gpu-v100 --base-records "$data/gpu-v100/records.jsonl.gz" \
  --base-target "cuda -keys=cuda,gpu -max_num_threads=1024 -thread_warp_size=32" \
  --records tests/data/gpu-h100/records.jsonl.gz --name gpu-h100
