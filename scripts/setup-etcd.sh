#!/usr/bin/env bash
# Installs etcd for the fleet-store tests and the demo (envoy/tests/test_fleet_store.py,
# envoy/demo.py): Debian's `etcd-server` (the `etcd` binary) and `etcd-client` (`etcdctl`).
# Quick when both are already there. Installing the package starts no etcd in these
# containers; the tests and the demo start their own on 127.0.0.1 and stop it by PID.
# Usage: scripts/setup-etcd.sh   (prints the etcd and etcdctl paths on its last two lines)
set -euo pipefail

if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" != "0" ]; then
    sudo_cmd="sudo"
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    etcd-server etcd-client >/dev/null
fi
command -v etcd
command -v etcdctl
