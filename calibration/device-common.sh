# shellcheck shell=bash
# calibration/device-common.sh: what the GPU-machine scripts share (sourced by
# run-on-device.sh and run-execute-on-device.sh; not run on its own): logging,
# the build dependencies that travel as .debs, the environment record, the
# CUDA architecture, and building podsim with CUDA.
#
# The caller sets `root` (the repository) and `log_tag` before sourcing, and
# `OUT` before device_prepare.
#
# The GPU machine cannot install packages, so Boost, nlohmann-json and Eigen
# travel as .deb files (carry "build/device-deps") and are unpacked under
# /tmp, never into /. PODSIM_DEVICE_USE_DEBS=1 uses the carried .debs even
# where the system has the headers.

# shellcheck disable=SC2154  # root and log_tag come from the sourcing script
deps_dir="$root/build/device-deps"
deb_packages=(libboost1.74-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  nlohmann-json3-dev libeigen3-dev)

log() { echo "[$log_tag $(date -u +%H:%M:%S)] $*" >&2; }

# Unpacks a .deb under a prefix: dpkg-deb where there is one, else ar + tar.
unpack_deb() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    local member
    member="$(ar t "$1" | grep '^data\.tar')" || return 1
    local z=()
    case "$member" in
      *.xz) z=(-J) ;;
      *.zst) z=(--zstd) ;;
      *.gz) z=(-z) ;;
    esac
    ar p "$1" "$member" | tar -x "${z[@]}" -C "$2" -f -
  fi
}

# --fetch-deps, on a machine with apt: download the .debs into build/device-deps.
fetch_deps() {
  mkdir -p "$deps_dir"
  cd "$deps_dir" || exit 1
  if ! apt-get download "${deb_packages[@]}" >&2; then
    log "apt-get download failed; refreshing the package lists and retrying"
    if ! { apt-get update >&2 && apt-get download "${deb_packages[@]}" >&2; }; then
      log "could not download ${deb_packages[*]}"
      exit 1
    fi
  fi
  log "downloaded to $deps_dir:"
  ls -la "$deps_dir" >&2
  log "now call the device tool with carry [\"build/device-deps\"] and command $0"
  exit 0
}

system_has_deps() {
  [ -f /usr/include/boost/version.hpp ] && [ -f /usr/include/nlohmann/json.hpp ] &&
    [ -f /usr/include/eigen3/Eigen/Dense ] &&
    ls /usr/lib/x86_64-linux-gnu/libboost_program_options.so >/dev/null 2>&1
}

# Records the machine in $OUT/environment.txt and sets nvcc_bin, generator,
# prefix_args and arch for build_podsim. Exits when something is missing.
device_prepare() {
  # CMake and ninja may live in a Python environment (the device image's are).
  for d in /opt/*/.venv/bin; do
    [ -d "$d" ] && PATH="$PATH:$d"
  done
  export PATH
  mkdir -p "$OUT"
  {
    echo "== date"; date -u
    echo "== uname"; uname -a
    echo "== os"; head -3 /etc/os-release 2>/dev/null
    echo "== nvidia-smi"; nvidia-smi 2>&1
    echo "== clocks"; nvidia-smi --query-gpu=name,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv 2>&1
    echo "== nvcc"; (command -v nvcc && nvcc --version) 2>&1 || /usr/local/cuda/bin/nvcc --version 2>&1
    echo "== cmake"; cmake --version 2>&1
    echo "== ninja"; ninja --version 2>&1
    echo "== c++"; c++ --version 2>&1
  } >"$OUT/environment.txt" 2>&1
  log "environment recorded in $OUT/environment.txt"

  nvcc_bin="$(command -v nvcc || true)"
  [ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc_bin=/usr/local/cuda/bin/nvcc
  if [ -z "$nvcc_bin" ]; then
    log "FATAL: no nvcc (neither on PATH nor /usr/local/cuda/bin); podsim's GPU commands need the CUDA toolkit"
    exit 1
  fi
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)

  prefix_args=()
  if system_has_deps && [ "${PODSIM_DEVICE_USE_DEBS:-0}" != 1 ]; then
    log "build dependencies found on the system"
  elif ls "$deps_dir"/*.deb >/dev/null 2>&1; then
    local prefix=/tmp/podsim-deps
    rm -rf "$prefix" && mkdir -p "$prefix"
    for deb in "$deps_dir"/*.deb; do
      unpack_deb "$deb" "$prefix" || { log "FATAL: cannot unpack $deb"; exit 1; }
    done
    local usr="$prefix/usr" boost_dir json_dir eigen_dir
    boost_dir="$(dirname "$(find "$usr" -name BoostConfig.cmake | head -1)")"
    json_dir="$(dirname "$(find "$usr" -name nlohmann_jsonConfig.cmake | head -1)")"
    eigen_dir="$(dirname "$(find "$usr" -name Eigen3Config.cmake | head -1)")"
    if [ ! -f "$boost_dir/BoostConfig.cmake" ] || [ ! -f "$json_dir/nlohmann_jsonConfig.cmake" ] || [ ! -f "$eigen_dir/Eigen3Config.cmake" ]; then
      log "FATAL: the carried .debs lack a CMake package config (Boost: $boost_dir, json: $json_dir, Eigen: $eigen_dir)"
      exit 1
    fi
    prefix_args=(-DCMAKE_PREFIX_PATH="$usr" -DBoost_DIR="$boost_dir" -Dnlohmann_json_DIR="$json_dir"
      -DEigen3_DIR="$eigen_dir")
    export LD_LIBRARY_PATH="$usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    log "build dependencies unpacked from the carried .debs into $prefix"
  else
    log "FATAL: Boost (program_options), nlohmann-json and Eigen are missing and no .debs were carried."
    log "On a machine with apt, in the repository: $0 --fetch-deps;"
    log "then call the device tool with carry [\"build/device-deps\"]."
    exit 1
  fi

  local cc
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')"
  case "$cc" in
    9.0) arch="90a" ;;            # wgmma needs the arch-specific sm_90a
    8.*) arch="80" ;;             # sm_80 code runs on every 8.x part
    "") arch="80;90a" ;;          # nvidia-smi could not say: build both
    *) arch="${cc/./}" ;;         # e.g. 10.0 -> 100 (no wgmma there; mma.sync and cuBLASLt run)
  esac
  log "GPU compute capability '${cc:-unknown}': building CUDA architectures $arch"
}

# build_podsim BUILD_DIR: configures (CUDA on, no tests or benchmarks) and
# builds the podsim binary, logging to $OUT/build.log. Exits on failure.
build_podsim() {
  local build_dir="$1" t0
  t0=$(date +%s)
  log "configuring (log: $OUT/build.log)"
  if ! cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DPODSIM_BUILD_TESTS=OFF -DPODSIM_BUILD_BENCH=OFF -DPODSIM_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc_bin" -DPODSIM_CUDA_ARCHITECTURES="$arch" "${prefix_args[@]}" >"$OUT/build.log" 2>&1; then
    log "FATAL: cmake configure failed; the end of $OUT/build.log:"
    tail -40 "$OUT/build.log" >&2
    exit 1
  fi
  if grep -q "no CUDA compiler found" "$OUT/build.log"; then
    log "FATAL: CMake did not enable CUDA; see $OUT/build.log"
    exit 1
  fi
  log "building podsim with $(nproc) jobs"
  if ! cmake --build "$build_dir" -j "$(nproc)" --target podsim >>"$OUT/build.log" 2>&1; then
    log "FATAL: build failed; the end of $OUT/build.log:"
    tail -60 "$OUT/build.log" >&2
    exit 1
  fi
  log "built in $(($(date +%s) - t0)) s"
}
