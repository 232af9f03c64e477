#!/usr/bin/env bash
# calibration/run-execute-on-device.sh: build podsim with CUDA on the GPU
# machine, run `podsim execute` on every case of calibration/execute-cases/
# (one GPU's share of Llama 3 8B/70B/405B plans, TP 1-8, seq 2048-8192), keep
# each case's text report, JSON report and log in $OUT, print a summary table
# last. Made for the device tool's machine (one H200, no network, repo copied
# in); works on any Debian/Ubuntu box with a CUDA toolkit. About 10 minutes
# with the build.
#
#   calibration/run-execute-on-device.sh --fetch-deps   # HERE, on a machine with apt: download
#                                                       # the build dependencies (.debs)
#   calibration/run-execute-on-device.sh                # THERE: build, execute, report
#
# The build dependencies travel as .debs (see calibration/device-common.sh).
# Environment: OUT (default build/execute-out), PODSIM_EXECUTE_CASES (a folder
# of scenario files, default calibration/execute-cases), PODSIM_EXECUTE_LAYERS
# (layers per pass, default 2), PODSIM_EXECUTE_ARGS (extra arguments, e.g.
# "--passes 3"), PODSIM_EXECUTE_BUDGET (seconds for all cases, default 360),
# PODSIM_DEVICE_USE_DEBS=1 (use the carried .debs even where the system has the headers).
#
# Exit status: 0 every case ran and passed its checks; 4 some case failed a
# check or could not run; 3 no CUDA device; 1 the build failed.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034  # read by device-common.sh
log_tag=run-execute-on-device
# shellcheck source=calibration/device-common.sh
. "$root/calibration/device-common.sh"

[ "${1:-}" = "--fetch-deps" ] && fetch_deps

OUT="${OUT:-$root/build/execute-out}"
cases_dir="${PODSIM_EXECUTE_CASES:-$root/calibration/execute-cases}"
layers="${PODSIM_EXECUTE_LAYERS:-2}"
budget="${PODSIM_EXECUTE_BUDGET:-360}"
build_dir="$root/build/device"
t_start=$(date +%s)
device_prepare
build_podsim "$build_dir"
podsim="$build_dir/podsim"

# ---------------------------------------------------------------- cases
shopt -s nullglob
cases=("$cases_dir"/*.json)
if [ ${#cases[@]} -eq 0 ]; then
  log "FATAL: no scenario files in $cases_dir"
  exit 1
fi
log "${#cases[@]} cases, $layers layer(s) each, budget $budget s"
t_cases=$(date +%s)
: >"$OUT/statuses.txt"
worst=0
for case in "${cases[@]}"; do
  name="$(basename "$case" .json)"
  left=$((budget - ($(date +%s) - t_cases)))
  if [ "$left" -lt 30 ]; then
    log "$name: skipped, the budget is spent"
    echo "$name skipped" >>"$OUT/statuses.txt"
    worst=4
    continue
  fi
  per_case=$((left < 120 ? left : 120))
  log "$name (at most $per_case s)"
  t0=$(date +%s)
  # shellcheck disable=SC2086  # PODSIM_EXECUTE_ARGS is a word list on purpose
  timeout --signal=INT --kill-after=10 "$per_case" "$podsim" execute "$case" --layers "$layers" \
    --report "$OUT/$name.json" ${PODSIM_EXECUTE_ARGS:-} >"$OUT/$name.txt" 2>"$OUT/$name.log"
  status=$?
  log "$name: exit status $status in $(($(date +%s) - t0)) s"
  echo "$name $status" >>"$OUT/statuses.txt"
  if [ "$status" -eq 3 ]; then
    log "no CUDA device: $(tail -1 "$OUT/$name.log")"
    exit 3
  fi
  [ "$status" -ne 0 ] && worst=4
done
log "all cases done in $(($(date +%s) - t_start)) s"
ls -la "$OUT" >&2

# ---------------------------------------------------------------- summary
echo
echo "== podsim execute on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1): $layers layer(s) per case"
if command -v python3 >/dev/null; then
  python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
statuses = dict(line.split() for line in open(os.path.join(out, "statuses.txt")) if line.strip())
def pct(v): return "-" if v is None else f"{v * 100:+.1f}%"
def ms(v): return "-" if v is None else f"{v * 1e3:.2f}"
cols = ["case", "exit", "layer meas ms", "pred ms", "error", "<=10%", "gemm", "attention",
        "memory", "optimizer", "collective", "checks"]
rows = []
errors = []
for name in sorted(statuses):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        rows.append([name, statuses[name]] + ["-"] * (len(cols) - 2))
        continue
    r = json.load(open(path))
    layer = r["layer_fwd_bwd"]
    cls = r["classes"]
    def class_error(c): return pct(cls.get(c, {}).get("error"))
    within = layer.get("within_10_percent")
    if layer.get("error") is not None: errors.append(abs(layer["error"]))
    rows.append([name, statuses[name], ms(layer.get("measured_s")), ms(layer.get("predicted_s")),
                 pct(layer.get("error")), "-" if within is None else ("yes" if within else "no"),
                 class_error("gemm"), class_error("attention"), class_error("memory-bound"),
                 class_error("optimizer"), class_error("collective"),
                 "ok" if r.get("checks_passed") else "FAILED"])
widths = [max(len(str(x)) for x in col) for col in zip(cols, *rows)]
for row in [cols] + rows:
    print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))
if errors:
    print(f"\nper-layer forward+backward: mean |error| {sum(errors) / len(errors) * 100:.1f}%, "
          f"worst {max(errors) * 100:.1f}%, within 10%: {sum(e <= 0.10 for e in errors)}/{len(errors)}")
print("errors are predicted / measured - 1; classes sum n/pass x median over the measured ops")
PY
else
  for f in "$OUT"/*.txt; do
    [ "$(basename "$f")" = statuses.txt ] && continue
    [ "$(basename "$f")" = environment.txt ] && continue
    echo "$(basename "$f" .txt): $(grep -m1 '^per layer:' "$f" || echo 'no result')"
  done
fi
exit "$worst"
