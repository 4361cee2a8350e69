#!/usr/bin/env bash
# `pip install` that survives a flaky network: pip resumes a download cut off midway (CI once saw a
# wheel stop at 10.5 of 16.9 MB six times in a row), and should the whole install still fail it is run
# again after a pause; downloads that finished come from pip's cache the next time.
# Usage: scripts/pip_install.sh <python> <pip install arguments...>
set -uo pipefail
py="$1"
shift
export PIP_RETRIES="${PIP_RETRIES:-10}" PIP_RESUME_RETRIES="${PIP_RESUME_RETRIES:-30}"
for attempt in 1 2 3 4; do
	"$py" -m pip install "$@" && exit 0
	[ "$attempt" = 4 ] && break
	echo "pip install failed (attempt $attempt of 4); trying again in $((attempt * 15)) s" >&2
	sleep $((attempt * 15))
done
exit 1
