# scripts/gpu/env.sh — sourced by the study scripts of scripts/gpu/ from the repository root: where
# things are on the GPU machine (scripts/gpu/stage.sh lays them out). Each may be set beforehand.
#   DATA     the platforms' records.jsonl.gz folders (default ../shared/data)
#   BUILD    build folder (default /tmp/tcl-gpu-build; kept between runs on one machine)
#   LOGS     logs (default /tmp/tcl-gpu-logs)
#   PO_ROOT  Debian's Boost.Program_options (default ../program_options)
DATA=${DATA:-$(cd .. && pwd)/shared/data}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
LOGS=${LOGS:-/tmp/tcl-gpu-logs}
PO_ROOT=${PO_ROOT:-$(cd .. && pwd)/program_options}
