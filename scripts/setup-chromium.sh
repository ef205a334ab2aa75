#!/usr/bin/env bash
# Installs headless Chromium (Debian package `chromium`) for the report screenshot test
# (envoy/tests/test_report_html.py). Quick when it is already installed.
# Usage: scripts/setup-chromium.sh   (prints the chromium path on its last line)
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1; then
  sudo_cmd=""
  if [ "$(id -u)" != "0" ]; then
    sudo_cmd="sudo"
  fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null
fi
command -v chromium
