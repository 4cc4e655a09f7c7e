#!/usr/bin/env bash
# Installs mnemo's build dependencies from Debian packages (Debian 12 / Ubuntu 22.04
# or newer: CMake >= 3.21 is needed). Idempotent: installs only what dpkg says is
# missing, and does nothing at all when everything is present.
#
#   as root:     tools/setup-deps.sh      (apt-get update once, then install)
#   as a user:   tools/setup-deps.sh      (prints the command to run; exit 1 if needed)
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

packages=(
  cmake                  # >= 3.21 (presets, PROJECT_IS_TOP_LEVEL)
  ninja-build
  g++                    # >= 12 for C++20 (clang >= 14 works too)
  libeigen3-dev          # >= 3.4
  libgtest-dev
  libbenchmark-dev
  libomp-dev             # OpenMP for clang; GCC brings libgomp
  g++-aarch64-linux-gnu  # the AArch64/NEON cross build of the tests
  qemu-user              # runs that cross build
  python3                # the C API's ctypes example and its ctest (examples/python)
  libcpp-httplib-dev     # mnemo-server (examples/server.cpp) and its tests
  nlohmann-json3-dev     # mnemo-server's JSON (include/mnemo/serve/openai_*.hpp)
  pkg-config             # finds Debian's cpp-httplib (it ships no CMake package)
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup-deps: dpkg-query not found; this script is for Debian-based systems." >&2
  echo "setup-deps: install these (or their equivalents) by hand: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup-deps: all ${#packages[@]} packages are installed."
  exit 0
fi

command_line="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "setup-deps: missing packages: ${missing[*]}" >&2
  echo "setup-deps: run as root, or:  sudo sh -c '$command_line'" >&2
  exit 1
fi

echo "setup-deps: installing ${missing[*]}"
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
