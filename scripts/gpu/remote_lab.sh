#!/usr/bin/env bash
# scripts/gpu/remote_lab.sh HOST IN OUT — a lab command for `tclctl onboard --lab-command`: measures
# the records of IN (candidate lines) on HOST, a GPU machine with tcl-measure built with its CUDA
# backend, and writes the measured records to OUT. Copies over scp, runs over ssh.
#
#   tclctl onboard --platform gpu-h100 --candidates pool.jsonl --rounds 2 --fraction 0.1 --distill \
#       --lab-command 'scripts/gpu/remote_lab.sh gpu-box {in} {out}'
# Environment: TCL_MEASURE (tcl-measure on HOST, default tcl-measure on its PATH), MEASURE_FLAGS
#   (default --per-unit 64 --repeat 3 --min-repeat-ms 10), SSH and SCP (default ssh and scp).
set -euo pipefail
host=${1:?usage: remote_lab.sh HOST IN OUT} in=${2:?IN} out=${3:?OUT}
ssh=${SSH:-ssh} scp=${SCP:-scp}
dir=$($ssh "$host" mktemp -d /tmp/tcl-lab-XXXXXX)
trap '$ssh "$host" rm -rf "$dir" || true' EXIT
$scp -q "$in" "$host:$dir/to-measure.jsonl"
# shellcheck disable=SC2029  # the command line is built here on purpose
$ssh "$host" "${TCL_MEASURE:-tcl-measure} run $dir/to-measure.jsonl -o $dir/measured.jsonl \
  ${MEASURE_FLAGS:---per-unit 64 --repeat 3 --min-repeat-ms 10}"
$scp -q "$host:$dir/measured.jsonl" "$out"
