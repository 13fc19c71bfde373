# scripts/gpu/env.sh — sourced by the study scripts of scripts/gpu/ from the repository root: where
# things are on the GPU machine (scripts/gpu/stage.sh lays them out). Each may be set beforehand.
#   DATA     the platforms' records.jsonl.gz folders (default ../shared/data)
#   BUILD    build folder (default /tmp/tcl-gpu-build; kept between runs on one machine)
#   LOGS     logs (default /tmp/tcl-gpu-logs)
#   PO_ROOT  Debian's Boost.Program_options (default ../program_options)
#   PYTORCH_CUDA_ALLOC_CONF  default expandable_segments:True: six bench_continual runs side by side on
#            one H200 ran it out of memory at gpu-v100's step (session 20, salt 2, each process caching
#            20-29 GiB); with it, six at salt 0 and seven (six on the validation split, one at salt 2) ran
#            through, and every score they share with runs without it is the same to the last digit
DATA=${DATA:-$(cd .. && pwd)/shared/data}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
LOGS=${LOGS:-/tmp/tcl-gpu-logs}
PO_ROOT=${PO_ROOT:-$(cd .. && pwd)/program_options}
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
