#!/usr/bin/env bash
# Prints the packages' maintainer, as Debian's control file and the
# changelog name it. MAINTAINER overrides it.
echo "${MAINTAINER:-tether authors <tether-dev@users.noreply.github.com>}"
