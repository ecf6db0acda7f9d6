#!/usr/bin/env bash
# Prints the version of the checkout, for make build and make dist:
# `git describe` of the last v-tag without its "v" (1.2.3, or
# 1.2.3-4-gabcdef1 four commits after it), or 0.0.0-gabcdef1 before the
# first tag; "-dirty" when the tree has changes not committed.
set -euo pipefail
cd "$(dirname "$0")/.."
if d=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
	echo "${d#v}"
elif h=$(git describe --always --abbrev=7 --dirty 2>/dev/null); then
	echo "0.0.0-g$h"
else
	echo 0.0.0
fi
