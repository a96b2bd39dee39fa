#!/usr/bin/env bash
# Runs every check and test of the project on a fresh machine: installs the test tools
# (etcd, kubectl 1.20 and 1.35, helm), then formatting, lints, and all tests
# (unit, black-box over TLS, end-to-end with real kubectl, both storage backends).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-test-tools.sh
export PATH="$root/.tools/bin:$PATH"
export APISERVER_TOOLS="$root/.tools/bin"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
cargo test --workspace --all-features
