#!/usr/bin/env bash
# calibration/run-on-device.sh: build podsim with CUDA on the GPU machine, run
# `podsim calibrate`, keep the logs and the profile in $OUT, print a summary
# table last. Made for the device tool's machine (one H200, no network, repo
# copied in); works on any Debian/Ubuntu box with a CUDA toolkit.
#
#   calibration/run-on-device.sh --fetch-deps   # HERE, on a machine with apt: download the
#                                               # build dependencies as .debs into build/device-deps
#   calibration/run-on-device.sh                # THERE: build, calibrate, report
#
# The build dependencies travel as .debs (see calibration/device-common.sh).
# Environment: OUT (default build/calibration-out), PODSIM_PROFILE_NAME
# (default h200-sxm-141g.json), PODSIM_CALIBRATE_ARGS (extra arguments, e.g.
# --quick), PODSIM_CALIBRATE_TIMEOUT (seconds, default 420),
# PODSIM_DEVICE_USE_DEBS=1 (use the carried .debs even where the system has the headers).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034  # read by device-common.sh
log_tag=run-on-device
# shellcheck source=calibration/device-common.sh
. "$root/calibration/device-common.sh"

[ "${1:-}" = "--fetch-deps" ] && fetch_deps

OUT="${OUT:-$root/build/calibration-out}"
profile="$OUT/${PODSIM_PROFILE_NAME:-h200-sxm-141g.json}"
build_dir="$root/build/device"
t_start=$(date +%s)
device_prepare
build_podsim "$build_dir"

# ---------------------------------------------------------------- calibrate
# shellcheck disable=SC2086  # PODSIM_CALIBRATE_ARGS is a word list on purpose
timeout --signal=INT --kill-after=20 "${PODSIM_CALIBRATE_TIMEOUT:-420}" \
  "$build_dir/podsim" calibrate --out "$profile" ${PODSIM_CALIBRATE_ARGS:-} \
  >"$OUT/summary.txt" 2> >(tee "$OUT/calibrate.log" >&2)
status=$?
sleep 1  # let tee finish
case $status in
  0) verdict="profile written, every benchmark that can run here passed" ;;
  4) verdict="profile written; some benchmarks failed (see 'problem:' lines)" ;;
  3) verdict="no CUDA device" ;;
  124 | 130 | 137) verdict="timed out; the profile holds the sections finished before that" ;;
  *) verdict="failed (see $OUT/calibrate.log)" ;;
esac
log "calibrate exit status $status: $verdict; total $(($(date +%s) - t_start)) s"
ls -la "$OUT" >&2
echo
echo "== podsim calibrate summary ($(basename "$profile"))"
cat "$OUT/summary.txt"
exit "$status"
