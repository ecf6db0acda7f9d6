#!/usr/bin/env bash
# make dist-test: builds the release twice and proves it.
#   1. make dist into dist/ and into a second directory: every artifact
#      the same bytes (reproducible), SHA256SUMS checkable from dist/.
#   2. The dist binary for this machine says its version, commit and date;
#      the SBOM is CycloneDX and names exactly the modules the dist
#      binaries are built from (go version -m); every artifact the
#      README's Install section names is in dist/.
#   3. The .deb passes lintian (no error, no warning that is not
#      overridden with a reason), its desktop entry desktop-file-validate,
#      its metainfo appstreamcli validate; the .rpm holds the same files
#      and passes rpmlint (packaging/linux/rpmlint.toml says what it
#      lets pass, and why). No arm64 Windows installer, because
#      Debian's makensis cannot build one: it is asked, and a makensis
#      that can fails this check (decision D139).
#   The Scoop and Homebrew manifests' and the Windows installer's own
#   tests (packaging/manifests-test.sh, packaging/windows/wine-test.sh),
#   where they exist, on this dist.
#   4. As root with apt-get: apt-get install ./dist/tether_<v>_amd64.deb
#      installs every file, starts nothing, and is removed again; then
#      the package tests (tests/ TestPackage*, TETHER_PACKAGE_DEB) use it;
#      the .rpm is installed with rpm -i --nodeps into a database of its
#      own, upgraded with rpm -U and erased (TETHER_PACKAGE_RPM).
# A check whose tool is missing skips with a line saying so; with
# CI=true that is a failure.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${1:-$(bash packaging/version.sh)}
DISTDIR=${DISTDIR:-dist}
second=$(mktemp -d "${TMPDIR:-/tmp}/tether-dist2.XXXXXX")
trap 'rm -rf "$second"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
skip() {
	echo "SKIP: $*"
	if [ "${CI:-}" = true ]; then fail "CI=true: $*"; fi
}

# --- 1. twice, byte for byte ---
GO=$GO bash packaging/dist.sh "$VERSION" "$DISTDIR"
GO=$GO bash packaging/dist.sh "$VERSION" "$second"
if diff <(cd "$DISTDIR" && ls -A) <(cd "$second" && ls -A) >/dev/null && cmp -s "$DISTDIR/SHA256SUMS" "$second/SHA256SUMS"; then
	echo "ok: two builds are byte for byte the same ($(wc -l <"$DISTDIR/SHA256SUMS") artifacts)"
else
	diff "$DISTDIR/SHA256SUMS" "$second/SHA256SUMS" || true
	fail "two builds of the same commit differ"
fi
(cd "$DISTDIR" && sha256sum --quiet -c SHA256SUMS) || fail "sha256sum -c SHA256SUMS in $DISTDIR"
for f in "$DISTDIR"/*; do
	case $(basename "$f") in SHA256SUMS) continue ;; esac
	grep -q "  $(basename "$f")\$" "$DISTDIR/SHA256SUMS" || fail "SHA256SUMS does not cover $(basename "$f")"
done

PKGVERSION=$(bash packaging/pkgversion.sh "$VERSION")
deb=$DISTDIR/tether_${PKGVERSION}_amd64.deb
rpm=$DISTDIR/tether-${PKGVERSION}-1.x86_64.rpm
for a in "$deb" "$rpm" "$DISTDIR/tether_${PKGVERSION}_arm64.deb" "$DISTDIR/tether-${PKGVERSION}-1.aarch64.rpm" \
	"$DISTDIR/tether_${VERSION}_src.tar.gz" "$DISTDIR/tether_${VERSION}.cdx.json" \
	"$DISTDIR/tether-${VERSION}-setup-amd64.exe" "$DISTDIR/tether.rb" "$DISTDIR/tether.json"; do
	[ -s "$a" ] || fail "no $a"
done
for t in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64; do
	case $t in windows*) a=$DISTDIR/tether_${VERSION}_$t.zip list="unzip -Z1" exe=tether.exe ;; *) a=$DISTDIR/tether_${VERSION}_$t.tar.gz list="tar tzf" exe=tether ;; esac
	[ -s "$a" ] || { fail "no $a"; continue; }
	got=$($list "$a" | sed 's|^[^/]*/||' | grep -v '/$' | grep . | sort | tr '\n' ' ')
	want="LICENSE README.md completions/tether.bash completions/tether.fish completions/tether.ps1 completions/tether.zsh $exe tether.1"
	[ -d guardian/cmd/tether-guardian ] && want="$want ${exe/tether/tether-guardian}"
	want=$(printf '%s\n' $want | sort | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "$a holds: $got; want: $want"
done

# --- 2. the version in the binary ---
commit=$(git rev-parse HEAD)
date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d)
bin=$(mktemp -d "${TMPDIR:-/tmp}/tether-bin.XXXXXX")
tar -xzf "$DISTDIR/tether_${VERSION}_linux_amd64.tar.gz" -C "$bin"
out=$("$bin/tether_${VERSION}_linux_amd64/tether" version)
case "$out" in
"tether $VERSION"$'\n'"commit $commit of $date"$'\n'*) echo "ok: tether version: $(head -2 <<<"$out" | tr '\n' ' ')" ;;
*) fail "tether version says: $out" ;;
esac

# The SBOM: CycloneDX, this release as its component, and one component
# per module that any dist binary is built from, no more, no less.
for t in linux_arm64 darwin_amd64 darwin_arm64; do
	tar -xzf "$DISTDIR/tether_${VERSION}_$t.tar.gz" -C "$bin"
done
for t in windows_amd64 windows_arm64; do
	unzip -q "$DISTDIR/tether_${VERSION}_$t.zip" -d "$bin"
done
# The Go toolchain that built them counts as one (golang.org/toolchain).
find "$bin" -type f \( -name tether -o -name tether-guardian -o -name '*.exe' \) -exec "$GO" version -m {} + |
	awk '$1 == "dep" { print $2 "@" $3 } $1 ~ /:$/ { print "golang.org/toolchain@" $2 }' | sort -u >"$bin/modules"
python3 - "$DISTDIR/tether_${VERSION}.cdx.json" "$VERSION" "$bin/modules" <<'PY' || fail "the SBOM"
import json, sys
bom_path, version, modules_path = sys.argv[1:]
bom = json.load(open(bom_path))
want = {l.strip() for l in open(modules_path) if l.strip()}
got = {c["name"] + "@" + c["version"] for c in bom.get("components", [])}
bad = []
if bom.get("bomFormat") != "CycloneDX" or not bom.get("specVersion"):
    bad.append(f"not CycloneDX: bomFormat {bom.get('bomFormat')!r}, specVersion {bom.get('specVersion')!r}")
main = bom.get("metadata", {}).get("component", {})
if main.get("version") != version or main.get("name") != "github.com/tether-dev/tether":
    bad.append(f"its component is {main.get('name')!r} {main.get('version')!r}, want github.com/tether-dev/tether {version}")
if not any(l.get("license", {}).get("id") == "Apache-2.0" for l in main.get("licenses", [])):
    bad.append("its component has no Apache-2.0 licence")
for c in bom.get("components", []):
    if c.get("purl") != f"pkg:golang/{c['name']}@{c['version']}":
        bad.append(f"{c['name']}: purl {c.get('purl')!r}")
if got - want:
    bad.append(f"components no dist binary is built from: {sorted(got - want)}")
if want - got:
    bad.append(f"modules of the dist binaries it does not name: {sorted(want - got)}")
for b in bad:
    print("FAIL: the SBOM:", b)
sys.exit(1 if bad else 0)
PY
echo "ok: the SBOM names the $(wc -l <"$bin/modules") modules of the dist binaries"
rm -rf "$bin"

# The README's Install section names artifacts by <version>: each is in
# dist (the packages' names take the version as packaging/pkgversion.sh
# writes it).
python3 - README.md "$DISTDIR" "$VERSION" "$PKGVERSION" <<'PY' || fail "the README's Install section"
import os, re, sys
readme, dist, version, pkgversion = sys.argv[1:]
text = open(readme).read()
section = re.search(r"^## Install\n(.*?)^## ", text, re.M | re.S)
if not section:
    print("FAIL: README.md has no Install section"); sys.exit(1)
names = set(re.findall(r"`?((?:tether|SHA256SUMS)[\w.<>-]*\.(?:deb|rpm|exe|rb|json|zip|tar\.gz)|SHA256SUMS)", section.group(1)))
names = {n for n in names if "<os>" not in n and "<arch>" not in n}
missing = [n for n in sorted(names)
           if not any(os.path.exists(os.path.join(dist, n.replace("<version>", v))) for v in (version, pkgversion))]
for n in missing:
    print(f"FAIL: the README's Install section names {n}, which make dist does not write")
if missing:
    sys.exit(1)
print(f"ok: the README's Install section names {len(names)} artifacts, each in {dist}: {' '.join(sorted(names))}")
PY

# --- 3. the packages' checks ---
if command -v lintian >/dev/null; then
	# Errors and warnings fail; an override needs its reason in the file.
	out=$(lintian --pedantic --suppress-tags-from-file /dev/null "$deb" 2>&1 | grep -v '^running with root' || true)
	if grep -E '^[EW]: ' <<<"$out"; then fail "lintian: $deb"; else echo "ok: lintian $deb${out:+ ($(grep -c . <<<"$out") info/pedantic hints)}"; fi
else
	skip "no lintian"
fi
tree=$(mktemp -d "${TMPDIR:-/tmp}/tether-deb.XXXXXX")
dpkg-deb -x "$deb" "$tree"
if command -v desktop-file-validate >/dev/null; then
	desktop-file-validate "$tree/usr/share/applications/tether.desktop" && echo "ok: desktop-file-validate" || fail "desktop-file-validate"
else
	skip "no desktop-file-validate (desktop-file-utils)"
fi
if command -v appstreamcli >/dev/null; then
	appstreamcli validate --no-net "$tree/usr/share/metainfo/tether.metainfo.xml" >/dev/null && echo "ok: appstreamcli validate" ||
		{ appstreamcli validate --no-net "$tree/usr/share/metainfo/tether.metainfo.xml"; fail "appstreamcli validate"; }
else
	skip "no appstreamcli (appstream)"
fi
if command -v groff >/dev/null; then
	warn=$(zcat "$tree/usr/share/man/man1/tether.1.gz" | groff -man -Tutf8 -ww -z 2>&1)
	[ -z "$warn" ] && echo "ok: groff reads tether.1" || fail "groff: $warn"
fi
rm -rf "$tree"
if command -v rpm >/dev/null; then
	# The .deb's own lintian overrides are Debian's alone.
	debfiles=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print substr($6, 2)}' | grep -v '^/usr/share/lintian/' | sort)
	rpmfiles=$(rpm -qlp "$rpm" 2>/dev/null | sort)
	if [ "$debfiles" = "$rpmfiles" ]; then
		echo "ok: rpm -qlp lists the .deb's $(wc -l <<<"$rpmfiles") files"
	else
		diff <(echo "$debfiles") <(echo "$rpmfiles") || true
		fail "the .rpm and the .deb hold different files"
	fi
else
	skip "no rpm"
fi
if command -v rpmlint >/dev/null; then
	# Errors and warnings fail; packaging/linux/rpmlint.toml filters
	# those that have a reason, and says it.
	for r in "$rpm" "$DISTDIR/tether-${PKGVERSION}-1.aarch64.rpm"; do
		if out=$(rpmlint -c packaging/linux/rpmlint.toml "$r" 2>&1) && ! grep -qE '^tether[^ ]*: [EW]: ' <<<"$out"; then
			echo "ok: rpmlint $r"
		else
			echo "$out"
			fail "rpmlint: $r"
		fi
	done
else
	skip "no rpmlint (Debian 12 packages it: rpmlint)"
fi

# No arm64 Windows installer (decision D139): Debian's makensis has no
# arm64 stub. It is asked, so that one that can build it is noticed.
if command -v makensis >/dev/null; then
	probe=$(mktemp -d "${TMPDIR:-/tmp}/tether-nsis-arm64.XXXXXX")
	printf 'Unicode true\nTarget arm64-unicode\nOutFile "%s/probe.exe"\nSection\nSectionEnd\n' "$probe" >"$probe/probe.nsi"
	if out=$(makensis -V2 "$probe/probe.nsi" 2>&1); then
		fail "makensis $(makensis -VERSION) builds arm64 installers: make dist should write tether-${VERSION}-setup-arm64.exe (packaging/windows/installer.sh, D139)"
	elif grep -q 'adequate stub not found' <<<"$out"; then
		echo "ok: no arm64 Windows installer: makensis $(makensis -VERSION) says: $(grep -m1 'reading stub' <<<"$out")"
	else
		fail "makensis, asked for an arm64 installer, failed otherwise: $out"
	fi
	rm -rf "$probe"
	[ ! -e "$DISTDIR/tether-${VERSION}-setup-arm64.exe" ] || fail "an arm64 installer, which D139 says cannot be built"
else
	skip "no makensis (nsis)"
fi

# --- the other packagers' checks, on this dist ---
# The Scoop manifest, the Homebrew formula and the tray's Info.plist
# against the artifacts; the Windows installer under Wine.
if [ -f packaging/manifests-test.sh ]; then
	bash packaging/manifests-test.sh "$VERSION" "$DISTDIR" || fail "packaging/manifests-test.sh"
fi
if [ -f packaging/windows/wine-test.sh ]; then
	GO=$GO bash packaging/windows/wine-test.sh "$VERSION" "$DISTDIR" || fail "packaging/windows/wine-test.sh"
fi

# --- 4. installed for real ---
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	# A newer package of the same code, to upgrade to.
	next=$(mktemp -d "${TMPDIR:-/tmp}/tether-next.XXXXXX")
	TARGETS=linux/amd64 HOOKS=0 GO=$GO bash packaging/dist.sh "$VERSION.1" "$next" >/dev/null
	TETHER_PACKAGE_DEB=$(realpath "$deb") TETHER_PACKAGE_VERSION=$VERSION \
		TETHER_PACKAGE_DEB_NEXT=$(ls "$next"/tether_*_amd64.deb) TETHER_PACKAGE_VERSION_NEXT=$VERSION.1 \
		TETHER_PACKAGE_RPM=$(realpath "$rpm") TETHER_PACKAGE_RPM_NEXT=$(ls "$next"/tether-*.x86_64.rpm) \
		"$GO" test -count=1 -v -timeout 15m -run '^TestPackage' ./tests/ || fail "the package tests"
	rm -rf "$next"
else
	skip "not root with apt-get: the .deb is not installed"
fi

[ "$failed" = 0 ] || exit 1
echo "dist-test: ok"
