#!/usr/bin/env bash
# installer.sh VERSION DISTDIR: builds DISTDIR/tether-VERSION-setup-amd64.exe
# with NSIS from DISTDIR/tether_VERSION_windows_amd64.zip. It installs
# every .exe the zip holds, its PowerShell completion (tether.ps1),
# README and LICENSE.
#
# The same zip gives the same installer, byte for byte: the files keep
# one time (SOURCE_DATE_EPOCH's, or tether.exe's in the zip) and makensis
# stamps no build time. There is no arm64 installer: NSIS has no arm64
# stub (see tether.nsi). NSIS_COMPRESSOR=zlib builds faster (tests).
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 VERSION DISTDIR" >&2
	exit 2
fi
version=$1 dist=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
zip="$dist/tether_${version}_windows_amd64.zip"
out="$dist/tether-${version}-setup-amd64.exe"
[ -f "$zip" ] || { echo "installer.sh: no $zip" >&2; exit 1; }
command -v makensis >/dev/null || { echo "installer.sh: makensis is missing (apt-get install nsis)" >&2; exit 1; }

stage=$(mktemp -d "${TMPDIR:-/tmp}/tether-nsis.XXXXXX")
trap 'rm -rf "$stage"' EXIT
unzip -q "$zip" -d "$stage/zip"

# The binaries are at the zip's top or in its one top directory.
exe=$(find "$stage/zip" -maxdepth 2 -name tether.exe -print -quit)
[ -n "$exe" ] || { echo "installer.sh: no tether.exe in $zip" >&2; exit 1; }
top=$(dirname "$exe")
mkdir -p "$stage/files/completions"
find "$top" -maxdepth 1 -name '*.exe' -exec cp -p {} "$stage/files/" \;
ps1=$(find "$top" -name tether.ps1 -print -quit)
[ -n "$ps1" ] || { echo "installer.sh: no tether.ps1 (PowerShell completion) in $zip" >&2; exit 1; }
cp -p "$ps1" "$stage/files/completions/tether.ps1"
for doc in README.md LICENSE; do
	f=$(find "$top" -maxdepth 1 -name "$doc*" -print -quit)
	if [ -n "$f" ]; then cp -p "$f" "$stage/files/$(basename "$f")"; fi
done
cp "$root/assets/icons/tether.ico" "$stage/tether.ico"
# Every file gets one time, which the installer keeps: SOURCE_DATE_EPOCH,
# or tether.exe's in the zip.
epoch=${SOURCE_DATE_EPOCH:-$(stat -c %Y "$exe")}
find "$stage/files" "$stage/tether.ico" -exec touch -h -d "@$epoch" {} +

# files.nsh: the staged files, in a fixed order, as the macros
# tether.nsi installs, sets aside and removes them with.
mapfile -t exes < <(cd "$stage/files" && LC_ALL=C ls -- *.exe)
mapfile -t others < <(cd "$stage/files" && LC_ALL=C find . -type f ! -name '*.exe' | sed 's|^\./||' | LC_ALL=C sort)
{
	echo '!macro STAGED_FILES'
	for f in "${exes[@]}" "${others[@]}"; do
		d=$(dirname "$f")
		if [ "$d" = . ]; then echo '  SetOutPath "$INSTDIR"'; else echo "  SetOutPath \"\$INSTDIR\\${d//\//\\}\""; fi
		echo "  File \"/oname=$(basename "$f")\" \"$stage/files/$f\""
	done
	echo '  SetOutPath "$INSTDIR"'
	echo '!macroend'
	# An old binary still running (a guardian of an agent that has run
	# since an upgrade before) keeps its name: the next one takes the
	# next free name.
	echo '!macro STAGED_ASIDE'
	for f in "${exes[@]}"; do
		cat <<-EOF
		  Delete "\$INSTDIR\\$f.old*"
		  ClearErrors
		  Delete "\$INSTDIR\\$f"
		  \${If} \${Errors}
		    StrCpy \$R9 0
		    \${Do}
		      \${IfNot} \${FileExists} "\$INSTDIR\\$f.old\$R9"
		        Rename "\$INSTDIR\\$f" "\$INSTDIR\\$f.old\$R9"
		        \${Break}
		      \${EndIf}
		      IntOp \$R9 \$R9 + 1
		    \${LoopUntil} \$R9 >= 100
		  \${EndIf}
		EOF
	done
	echo '!macroend'
	echo '!macro STAGED_OLD_DELETE'
	for f in "${exes[@]}"; do echo "  Delete \"\$INSTDIR\\$f.old*\""; done
	echo '!macroend'
	echo '!macro STAGED_DELETE'
	for f in "${exes[@]}"; do echo "  Delete \"\$INSTDIR\\$f.old*\""; done
	for f in "${exes[@]}" "${others[@]}"; do echo "  Delete \"\$INSTDIR\\${f//\//\\}\""; done
	echo '!macroend'
} >"$stage/files.nsh"

# Apps & features shows EstimatedSize in KiB.
size_kb=$(du -s -k --apparent-size "$stage/files" | cut -f1)
# VIProductVersion takes four numbers: 1.2.3 of 1.2.3-4-gabcdef1, then .0.
vi=$(printf '%s\n' "$version" | grep -oE '^[0-9]+\.[0-9]+\.[0-9]+' || echo 0.0.0).0

makensis -V2 -NOCD -DCOMPRESSOR="${NSIS_COMPRESSOR:-lzma}" \
	-DVERSION="$version" -DVIVERSION="$vi" -DSIZE_KB="$size_kb" \
	-DSTAGE="$stage" -DOUTFILE="$out.tmp" \
	-X"!include \"$stage/files.nsh\"" \
	"$here/tether.nsi"
mv "$out.tmp" "$out"
echo "wrote $out"
