#!/usr/bin/env bash
# Spark needs Java 17 or newer.  Install it from Debian's packages when missing
# and we are root; otherwise say plainly what to install.
set -euo pipefail
ver=$(java -version 2>&1 | awk -F'"' '/version/ {print $2}' | cut -d. -f1 || true)
if [ -n "${ver:-}" ] && [ "$ver" -ge 17 ] 2>/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Java 17+ not found: installing openjdk-17-jre-headless" >&2
  apt-get update -q && apt-get install -y -q openjdk-17-jre-headless
else
  echo "Spark needs Java 17+: install it (e.g. 'sudo apt-get install openjdk-17-jre-headless')" >&2
  exit 1
fi
