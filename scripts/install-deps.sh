#!/usr/bin/env bash
# Installs every Debian package TCL needs to build, test and run. Idempotent:
# packages already present are left alone. Called by the README, .ci/run and
# docker/Dockerfile, so the three always agree.
#
#   scripts/install-deps.sh            build + test + run dependencies
#   scripts/install-deps.sh --runtime  only what a built tcld needs to run
set -euo pipefail

runtime_packages=(
  libboost-json1.81.0 libboost-program-options1.81.0
  libtorch1.13 libopenblas0-pthread libxgboost0
  libpqxx-6.4 libprometheus-cpp-core1.0 libssl3 libspdlog1.10 zlib1g
  curl ca-certificates
)

build_packages=(
  build-essential cmake ninja-build ccache pkg-config git curl
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libtorch-dev libopenblas0-pthread
  libxgboost-dev  # the tuner's online cost model (tuner/cost_model.h), as Ansor's
  libpqxx-dev postgresql
  prometheus-cpp-dev prometheus
  libssl-dev zlib1g-dev libspdlog-dev
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev clang-format-14
  clang-tidy-14  # scripts/clang_tidy.sh (the version is part of what its baseline means)
  wrk python3
  python3-yaml  # tests/deploy/container_files_test.py reads compose.yaml and the Prometheus/Grafana files
  chromium  # the web console's browser tests (tests/ui/: headless, driven by the pinned playwright-core)
)

packages=("${build_packages[@]}")
if [[ "${1:-}" == "--runtime" ]]; then packages=("${runtime_packages[@]}"); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if (( ${#missing[@]} == 0 )); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
