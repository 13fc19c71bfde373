# bench/lib/tune_stack.sh — sourced by issue 47's tuning scripts (tune_onboard.sh, tune_continual.sh):
# a throwaway stack (stack.sh) whose lineage is x86-24c's train job, and one tuning run at a time.
#   tune_stack_start BUILD DATA OUT   the stack, then the lineage: x86-24c's train job with the
#                                     daemon's defaults on its first BASE_RECORDS (40000) records
#   tune_run LABEL NETWORK MODEL SEED BUDGET [tclctl tune flags...]
#                                     one run into OUT/LABEL/NETWORK-MODEL-sSEED, its log beside;
#                                     a whole first round unless the flags say --warmup N (the
#                                     first flag wins), not tclctl's auto: a study's settings stay fixed
#   newest_version                    the newest model version's number
#   stamp TEXT                        a progress line with the time since the start
source "$(dirname "${BASH_SOURCE[0]}")/stack.sh"

tune_stack_start() {
  tune_build=$1 tune_data=$2 tune_out=$3 tune_t0=$SECONDS
  mkdir -p "$tune_out"
  trap stack_stop EXIT
  stack_start "$tune_build"
  export TCL_URL=$base_url TCL_TOKEN=$token
  ctl=$tune_build/tools/tclctl
  stamp "the lineage: x86-24c's train job on ${BASE_RECORDS:-40000} of its records"
  "$ctl" platform create --name x86-24c --target "llvm -keys=cpu" --hardware-params 24,64,64,0,0,0,0,0 >/dev/null
  zcat "$tune_data/x86-24c/records.jsonl.gz" | head -n "${BASE_RECORDS:-40000}" >"$tune_out/x86-24c.jsonl" || true
  "$ctl" upload --platform x86-24c --quiet "$tune_out/x86-24c.jsonl"
  "$ctl" job start --platform x86-24c --kind train --wait 2>"$tune_out/train.log"
}

stamp() { echo "== $(date -u +%H:%M:%S) (+$((SECONDS - tune_t0)) s) $*"; }

tune_run() {
  local label=$1 network=$2 model=$3 seed=$4 budget=$5
  local run=$network-${model/+/-}-s$seed
  shift 5
  stamp "tune $label $network $model seed $seed"
  "$ctl" tune --platform this-machine --network "$network" --budget "$budget" --model "$model" \
    --seed "$seed" --dir "$tune_out/$label/$run" "$@" --warmup 0 >"$tune_out/$label-$run.log" 2>&1
}

newest_version() {
  stack_call GET "/v1/models?view=summary" | python3 -c 'import json,sys
print(max(v["version"] for v in json.load(sys.stdin)["versions"]))'
}
