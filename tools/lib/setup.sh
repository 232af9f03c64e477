# Shared set-up for tools/podsim, tools/test and tools/bench: install what is
# missing (Debian packages), configure once, build incrementally.
# Everything here reports on stderr so that `tools/podsim run --json` keeps a
# clean standard output.

podsim_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

podsim_packages=(cmake ninja-build g++ pkg-config
  libboost-graph-dev libboost-program-options-dev nlohmann-json3-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libopenmpi-dev openmpi-bin)

# podsim_preset_packages PRESET: add what PRESET needs beyond the default
# (the asan preset builds with clang; libFuzzer and the sanitizer runtimes
# come with libclang-rt-dev).
podsim_preset_packages() {
  case "$1" in
    asan) podsim_packages+=(clang libclang-rt-dev) ;;
  esac
}

podsim_install_missing() {
  local missing=()
  local p
  for p in "${podsim_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "podsim: installing ${missing[*]}" >&2
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "podsim: need root or sudo to install ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  # Try the cached package lists first; refresh them only if that fails.
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update >&2 &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2
  fi
}

# podsim_build PRESET [TARGET...]: configure if needed, then build.
podsim_build() {
  local preset="$1"
  shift
  local dir="$podsim_root/build/$preset"
  # A preset's cache variables apply when it configures: configure again when
  # CMakePresets.json changed since (e.g. the asan preset gained the fuzz target).
  if [ ! -f "$dir/build.ninja" ] || [ "$podsim_root/CMakePresets.json" -nt "$dir/CMakeCache.txt" ]; then
    cmake --preset "$preset" -S "$podsim_root" >&2 || return 1
  fi
  local targets=()
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$dir" -j "$(nproc)" "${targets[@]}" >&2
}
