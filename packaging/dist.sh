#!/usr/bin/env bash
# Builds every release artifact of tether into DISTDIR (make dist):
#
#   packaging/dist.sh [VERSION [DISTDIR]]
#
# VERSION defaults to packaging/version.sh (git describe), DISTDIR to
# dist. DISTDIR is emptied first, and then holds:
#   tether_<v>_{linux,darwin}_{amd64,arm64}.tar.gz
#   tether_<v>_windows_{amd64,arm64}.zip
#   tether_<pv>_{amd64,arm64}.deb, tether-<pv>-1.{x86_64,aarch64}.rpm
#   tether_<v>_src.tar.gz (git archive of HEAD), tether_<v>.cdx.json
#   whatever the hooks below write, and SHA256SUMS over all of it.
# <pv> is VERSION as Debian and RPM order it (packaging/pkgversion.sh);
# for a release, VERSION=x.y.z, the two are the same.
#
# Every target is built once, with -trimpath, the version stamped into
# internal/buildinfo and no cgo; the archives and packages carry the
# commit's time (SOURCE_DATE_EPOCH) as every file's time, root as owner,
# and their files in name order, so that two runs of the same commit
# give the same bytes (make dist-test checks it).
#
# Hooks: each of these that exists is run as `HOOK VERSION DISTDIR` after
# the archives and packages are written and before SHA256SUMS, and writes
# its artifact into DISTDIR:
#   packaging/windows/installer.sh   (the NSIS installer)
#   packaging/scoop/manifest.sh      (tether.json)
#   packaging/homebrew/formula.sh    (tether.rb)
# They find the built tree in TETHER_DIST_STAGE (exported; removed when
# this script ends):
#   $TETHER_DIST_STAGE/bin/<os>_<arch>/tether[.exe]   and tether-guardian[.exe]
#   $TETHER_DIST_STAGE/files/                         man page, completions, icons, unit
#   $TETHER_DIST_STAGE/tether_<v>_<os>_<arch>/        each archive's tree
# and TETHER_DIST_PKGVERSION, SOURCE_DATE_EPOCH in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

VERSION=${1:-$(bash packaging/version.sh)}
DISTDIR=${2:-dist}
GO=${GO:-go}
NFPM_VERSION=${NFPM_VERSION:-v2.48.0}
TARGETS=${TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
# HOOKS=0 skips the hooks below (a build of some TARGETS only).
HOOKS=${HOOKS:-1}

case "$VERSION" in
[0-9]*) ;;
*) echo "dist: VERSION $VERSION must start with a digit (1.2.3, not v1.2.3)" >&2; exit 2 ;;
esac
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	echo "dist: warning: the tree has changes not committed; the binaries are built from it, the source archive from HEAD" >&2
fi

COMMIT=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
DATE=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d)
PKGVERSION=$(bash packaging/pkgversion.sh "$VERSION")
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C
umask 022

mkdir -p "$DISTDIR"
DISTDIR=$(cd "$DISTDIR" && pwd)
find "$DISTDIR" -mindepth 1 -delete
stage=$(mktemp -d "${TMPDIR:-/tmp}/tether-dist.XXXXXX")
trap 'rm -rf "$stage"' EXIT
export TETHER_DIST_STAGE=$stage TETHER_DIST_PKGVERSION=$PKGVERSION

buildinfo=github.com/tether-dev/tether/internal/buildinfo
ldflags="-s -w -X $buildinfo.Version=$VERSION -X $buildinfo.Commit=$COMMIT -X $buildinfo.Date=$DATE"
guardian=
[ -d guardian/cmd/tether-guardian ] && guardian=./guardian/cmd/tether-guardian

# touch_tree gives every file and directory under $1 the commit's time.
touch_tree() { find "$1" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +; }

# --- the files made from the code, and the binaries ---
# The host's tether, built as the targets are (its packages' builds are
# shared with theirs), writes them (tether __distfiles, in cli).
CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -o "$stage/host-tether" .
"$stage/host-tether" __distfiles -out "$stage/files" -version "$VERSION" -date "$DATE"
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/} ext=
	[ "$os" = windows ] && ext=.exe
	out=$stage/bin/${os}_$arch
	echo "dist: building $os/$arch"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/tether$ext" .
	if [ -n "$guardian" ]; then
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$out/tether-guardian$ext" "$guardian"
	fi
done

# --- archives ---
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	name=tether_${VERSION}_${os}_$arch
	tree=$stage/$name
	mkdir -p "$tree/completions"
	cp "$stage/bin/${os}_$arch"/* "$tree/"
	cp README.md LICENSE "$stage/files/tether.1" "$tree/"
	cp "$stage/files/completions"/* "$tree/completions/"
	chmod -R u=rwX,go=rX "$tree"
	chmod 0755 "$stage/bin/${os}_$arch"/* "$tree"/tether "$tree"/tether-guardian "$tree"/*.exe 2>/dev/null || true
	touch_tree "$tree"
	if [ "$os" = windows ]; then
		(cd "$stage" && find "$name" -print | sort | zip -q -X -D -@ "$DISTDIR/$name.zip")
	else
		tar -C "$stage" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
			--format=gnu -cf - "$name" | gzip -9 -n >"$DISTDIR/$name.tar.gz"
	fi
done

# --- Linux packages ---
linux=$stage/linux
mkdir -p "$linux"
# The default takes no mail: a release for others sets MAINTAINER.
echo "dist: the packages' maintainer: $(bash packaging/maintainer.sh)${MAINTAINER:+ (MAINTAINER)}"
sed -e "s/@VERSION@/$VERSION/" -e "s/@DATE@/$DATE/" packaging/linux/tether.metainfo.xml >"$linux/tether.metainfo.xml"
{
	printf 'tether (%s-1) unstable; urgency=medium\n\n' "$PKGVERSION"
	printf '  * Release %s,\n    from commit %s.\n\n' "$VERSION" "$COMMIT"
	printf ' -- %s  %s\n' "$(bash packaging/maintainer.sh)" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9 -n >"$linux/changelog.Debian.gz"
for script in postinst prerm; do
	{
		# POSIX sh: rpm runs its scriptlets with /bin/sh, whatever the
		# first line says (and rpmlint checks them with it).
		printf '#!/bin/sh\nset -e\n\n'
		cat packaging/linux/services.sh "packaging/linux/$script.tail"
	} >"$linux/$script"
done
cp packaging/linux/lintian-overrides "$linux/lintian-overrides"
if [ -n "$guardian" ]; then
	{
		echo 'tether: statically-linked-binary [usr/bin/tether-guardian]'
		# The service runs it, never a person: it has no command line of its own.
		echo 'tether: no-manual-page [usr/bin/tether-guardian]'
	} >>"$linux/lintian-overrides"
fi
for t in $TARGETS; do
	os=${t%/*} arch=${t#*/}
	[ "$os" = linux ] || continue
	cfg=$linux/nfpm_$arch.yaml
	ARCH=$arch BIN=$stage/bin/linux_$arch FILES=$stage/files LINUX=$linux GUARDIAN=$guardian \
		PKGVERSION=$PKGVERSION MAINTAINER=$(bash packaging/maintainer.sh) bash packaging/nfpm.sh >"$cfg"
	case $arch in amd64) rpmarch=x86_64 ;; arm64) rpmarch=aarch64 ;; *) rpmarch=$arch ;; esac
	echo "dist: packaging linux/$arch"
	"$GO" run "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" package --config "$cfg" --packager deb \
		--target "$DISTDIR/tether_${PKGVERSION}_$arch.deb" >/dev/null
	"$GO" run "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION" package --config "$cfg" --packager rpm \
		--target "$DISTDIR/tether-$PKGVERSION-1.$rpmarch.rpm" >/dev/null
done

# --- source archive and SBOM ---
git archive --format=tar --prefix="tether_${VERSION}_src/" HEAD | gzip -9 -n >"$DISTDIR/tether_${VERSION}_src.tar.gz"
"$GO" run ./internal/sbom -version "$VERSION" -time "$SOURCE_DATE_EPOCH" "$stage"/bin/*/tether* >"$DISTDIR/tether_$VERSION.cdx.json"

# --- the hooks of the other packagers ---
for hook in packaging/windows/installer.sh packaging/scoop/manifest.sh packaging/homebrew/formula.sh; do
	if [ -f "$hook" ] && [ "$HOOKS" = 1 ]; then
		echo "dist: $hook"
		bash "$hook" "$VERSION" "$DISTDIR"
	fi
done

# --- checksums, over every artifact ---
(cd "$DISTDIR" && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '.*' -printf '%f\n' | sort | xargs -d '\n' sha256sum >SHA256SUMS)
echo "dist: $(wc -l <"$DISTDIR/SHA256SUMS") artifacts in $DISTDIR"
