#!/usr/bin/env bash
# Prints VERSION ($1) as Debian and RPM versions order it: a release
# (1.2.3) as it is; git describe's commits after a tag (1.2.3-4-gabcdef1)
# after it, as 1.2.3+4.gabcdef1; a pre-release (1.2.3-rc1, or
# 0.0.0-gabcdef1 before the first tag) before it, as 1.2.3~rc1; a tree
# with changes not committed ("-dirty") with +dirty.
set -euo pipefail
v=$1
v=$(sed -E -e 's/-([0-9]+)-g([0-9a-f]+)/+\1.g\2/' -e 's/-dirty$/+dirty/' <<<"$v")
echo "${v//-/\~}"
