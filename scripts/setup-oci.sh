#!/usr/bin/env bash
# Installs the OCI tools the image tests use (envoy/tests/test_oci.py), from Debian: skopeo
# (inspect, copy between an OCI layout, an oci-archive, a registry and a dir) and
# docker-registry (the CNCF distribution registry, `docker-registry serve CONFIG`, which the
# tests start on 127.0.0.1 and stop by PID). Quick when both are already installed; installing
# the package starts no registry (the tests start their own).
# Usage: scripts/setup-oci.sh   (prints both paths on its last two lines)
set -euo pipefail

if ! command -v skopeo >/dev/null 2>&1 || [ ! -x /usr/bin/docker-registry ]; then
  sudo_cmd=""
  if [ "$(id -u)" != "0" ]; then
    sudo_cmd="sudo"
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq skopeo docker-registry >/dev/null
fi
command -v skopeo
ls /usr/bin/docker-registry
