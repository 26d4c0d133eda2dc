#!/usr/bin/env bash
# What the browser tests (tests/browser/) need beyond the venv, installed only when missing, so a second
# run costs a few milliseconds: Debian's chromium (Playwright's own browser download is never used), npm
# and the axe-core of package-lock.json (`npm ci`, rerun when the lock file is newer than node_modules),
# and a colour emoji font so that screenshots show emoji. `make test` runs it.
#
# apt-get needs root (CI runs as root). Elsewhere a missing package is reported and the run goes on: on a
# developer's machine the browser tests then skip with what to install; with CI set they fail.
set -euo pipefail
cd "$(dirname "$0")/../.."

packages=()
[ -x "${DYNABENCH_CHROMIUM:-/usr/bin/chromium}" ] || packages+=(chromium)
command -v npm >/dev/null 2>&1 || packages+=(npm)
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; then
  packages+=(fonts-noto-color-emoji)
fi
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "browser tests: installing ${packages[*]}"
    # Another apt run (unattended upgrades, a second checkout's tests) may hold the lock: wait for it.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${packages[@]}" >/dev/null
  else
    echo "browser tests: missing ${packages[*]}; install them (apt-get install ${packages[*]}) to run tests/browser/" >&2
  fi
fi

if command -v npm >/dev/null 2>&1; then
  if [ ! -f node_modules/axe-core/axe.min.js ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi
