#!/usr/bin/env bash
# Prints the nfpm config of the Linux packages of one architecture, for
# packaging/dist.sh, from its environment: ARCH, PKGVERSION, MAINTAINER,
# BIN (the built binaries), FILES (tether __distfiles' output), LINUX
# (the filled-in metainfo and the changelog), GUARDIAN (non-empty when
# tether-guardian is built). Every file is listed with its mode, so the
# packages do not depend on the umask or the files' own modes.
set -euo pipefail
cd "$(dirname "$0")/.."

file() { # SRC DST MODE [PACKAGER] [TYPE]
	printf '  - src: %s\n    dst: %s\n    file_info: {mode: %s}\n' "$1" "$2" "$3"
	[ -z "${4:-}" ] || printf '    packager: %s\n' "$4"
	[ -z "${5:-}" ] || printf '    type: %s\n' "$5"
}
# docfile SRC DST: the man page and what is in /usr/share/doc are the
# rpm's %doc, as rpmbuild marks them; nfpm leaves a "doc" file out of a
# .deb, which has no such mark, so the .deb gets it as a plain file.
docfile() {
	file "$1" "$2" 0644 deb
	file "$1" "$2" 0644 rpm doc
}

cat <<YAML
name: tether
arch: $ARCH
platform: linux
version: $PKGVERSION
version_schema: none
release: "1"
section: utils
priority: optional
maintainer: $MAINTAINER
vendor: tether
homepage: https://github.com/tether-dev/tether
license: Apache-2.0
description: |-
  Keeps local agent processes on a leash
  tether supervises the local agent processes of one user: a service
  starts the agents of its config, each under a guardian that holds the
  agent's identity, so that no identity runs twice and nothing an agent
  started outlives it. A system tray and a command line show and control
  them.
  .
  The systemd user unit is installed and not enabled: each user enables
  it with \`tether service install\`.
recommends:
  - systemd
scripts:
  postinstall: $LINUX/postinst
  preremove: $LINUX/prerm
rpm:
  summary: Keeps local agent processes on a leash
  # openSUSE still requires one (rpmlint's no-group-tag); Fedora ignores it.
  group: Applications/System
  # Not the building machine's name: the package is the same wherever
  # it is built.
  buildhost: tether
contents:
YAML
file "$BIN/tether" /usr/bin/tether 0755
[ -z "${GUARDIAN:-}" ] || file "$BIN/tether-guardian" /usr/bin/tether-guardian 0755
file "$FILES/tether.service" /usr/lib/systemd/user/tether.service 0644
file packaging/linux/tether.desktop /usr/share/applications/tether.desktop 0644
file "$LINUX/tether.metainfo.xml" /usr/share/metainfo/tether.metainfo.xml 0644
for d in "$FILES"/icons/hicolor/*/; do
	size=$(basename "$d")
	for f in "$d"apps/*; do
		file "$f" "/usr/share/icons/hicolor/$size/apps/$(basename "$f")" 0644
	done
done
docfile "$FILES/tether.1.gz" /usr/share/man/man1/tether.1.gz
file "$FILES/completions/tether.bash" /usr/share/bash-completion/completions/tether 0644
file "$FILES/completions/tether.zsh" /usr/share/zsh/vendor-completions/_tether 0644
file "$FILES/completions/tether.fish" /usr/share/fish/vendor_completions.d/tether.fish 0644
docfile packaging/linux/copyright /usr/share/doc/tether/copyright
docfile "$LINUX/changelog.Debian.gz" /usr/share/doc/tether/changelog.Debian.gz
file "$LINUX/lintian-overrides" /usr/share/lintian/overrides/tether 0644 deb
