#!/usr/bin/env bash
# wine-test.sh [VERSION DISTDIR]: installs the Windows installer the way
# a person would, silently, into a fresh Wine prefix, and checks what it
# left: the files, the Start-menu entry, the uninstall key and the Run
# value (reg query), that the installed tether.exe runs the service and
# 20 agents, that a newer installer over it while the service runs
# upgrades that service in place (every agent keeps its pid, the service
# answers with the newer version, no status request made all along is
# refused), and that the
# silent uninstaller stops the service, removes what was installed and
# leaves the user's config, state and logs. Before, it builds an
# installer twice from one zip and compares the two.
#
# With VERSION and DISTDIR it tests DISTDIR/tether-VERSION-setup-amd64.exe
# (make dist's); without them it builds a zip and an installer of the
# tree first. The older installer of the upgrade is the same zip with
# its binaries built again, stamped with an older version. Without wine,
# makensis or mingw it prints a SKIP line
# (a failure with CI=true).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}

missing=()
for cmd in wine wineboot wineserver winepath makensis unzip zip x86_64-w64-mingw32-gcc; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "SKIP dist-test-windows: missing ${missing[*]} (apt-get install wine64 nsis unzip zip gcc-mingw-w64-x86-64-win32)"
	[ "${CI:-}" = true ] && { echo "CI=true: the installer must be tested"; exit 1; }
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tether-winst.XXXXXX")
export WINEPREFIX="$tmp/prefix" WINEDEBUG=-all
# winemenubuilder would turn the Start-menu entry into a desktop file of
# the host.
export WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"
winehome="$tmp/home"
mkdir -p "$winehome" "$WINEPREFIX"
cleanup() {
	HOME="$winehome" wineserver -k >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
begin=$(date +%s)

fail() {
	echo "FAIL dist-test-windows: $*" >&2
	[ -s "$tmp/out" ] && sed 's/^/  | /' "$tmp/out" >&2
	[ -s "$tmp/service.log" ] && { echo "  the service's output:" >&2; sed 's/^/  | /' "$tmp/service.log" >&2; }
	exit 1
}
ok() { echo "ok: $*"; }
# w runs a Windows program; its output, without carriage returns, is in
# $tmp/out (a file, not a pipe: what the program leaves running must not
# hold the test's output open).
w() {
	local rc=0
	HOME="$winehome" wine "$@" >"$tmp/out.raw" 2>&1 || rc=$?
	tr -d '\r' <"$tmp/out.raw" >"$tmp/out"
	return "$rc"
}
# eventually SECONDS COMMAND...: polls COMMAND until it succeeds.
eventually() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.5
	done
}

# ---- the installers ----
if [ $# -eq 2 ]; then
	version=$1 dist=$(cd "$2" && pwd)
else
	# The zip as make dist lays it out, with what the installer takes.
	version=0.0.2 dist="$tmp/dist"
	tree="$tmp/zip/tether_${version}_windows_amd64"
	mkdir -p "$dist" "$tree/completions"
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $GO build -trimpath \
		-ldflags "-X github.com/tether-dev/tether/internal/buildinfo.Version=$version" -o "$tree/tether.exe" .
	$GO run . completion powershell >"$tree/completions/tether.ps1" ||
		fail "tether completion powershell: no PowerShell completion for the installer to take"
	cp README.md "$tree/"
	(cd "$tmp/zip" && zip -q -X -r "$dist/tether_${version}_windows_amd64.zip" .)
	NSIS_COMPRESSOR=zlib bash packaging/windows/installer.sh "$version" "$dist" >/dev/null
fi
setup="$dist/tether-${version}-setup-amd64.exe"
[ -f "$setup" ] || fail "no $setup"
# The older installer: the zip's files, with its binaries built again
# from this tree as version $old, so that the upgrade is seen to bring
# another binary and another version.
old=0.0.1
mkdir -p "$tmp/old" "$tmp/oldzip"
unzip -q "$dist/tether_${version}_windows_amd64.zip" -d "$tmp/oldzip"
for exe in $(cd "$tmp/oldzip" && find . -name '*.exe'); do
	case $(basename "$exe") in
	tether.exe) pkg=. ;;
	tether-guardian.exe) pkg=./guardian/cmd/tether-guardian ;;
	*) fail "the zip holds $exe, which this test cannot build as $old" ;;
	esac
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $GO build -trimpath \
		-ldflags "-X github.com/tether-dev/tether/internal/buildinfo.Version=$old" -o "$tmp/oldzip/$exe" "$pkg"
done
(cd "$tmp/oldzip" && zip -q -X -r "$tmp/old/tether_${old}_windows_amd64.zip" .)
NSIS_COMPRESSOR=zlib bash packaging/windows/installer.sh "$old" "$tmp/old" >/dev/null
# The same zip gives the same installer, byte for byte.
mkdir -p "$tmp/again"
cp "$tmp/old/tether_${old}_windows_amd64.zip" "$tmp/again/"
NSIS_COMPRESSOR=zlib bash packaging/windows/installer.sh "$old" "$tmp/again" >/dev/null
cmp -s "$tmp/old/tether-${old}-setup-amd64.exe" "$tmp/again/tether-${old}-setup-amd64.exe" ||
	fail "two installers built from the same zip differ"
echo "installers ready in $(($(date +%s) - begin))s, the same bytes from the same zip"

# ---- a fresh prefix ----
# Booted and settled before the persistent server starts: a server kept
# up over a prefix still being made stalls each later start.
HOME="$winehome" wineboot --init >"$tmp/boot.log" 2>&1
HOME="$winehome" wineserver -w
HOME="$winehome" wineserver -p
# Go takes its randomness from ProcessPrng in bcryptprimitives.dll,
# which Wine 8 does not have (see .ci/wine-test).
x86_64-w64-mingw32-gcc -shared -O2 -s -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
	.ci/wine/bcryptprimitives.c .ci/wine/bcryptprimitives.def -lbcrypt
# The agent: a Windows program that sleeps until it is stopped.
printf '#include <windows.h>\nint main(void) { Sleep(INFINITE); return 0; }\n' >"$tmp/sleeper.c"
x86_64-w64-mingw32-gcc -O2 -s -o "$tmp/sleeper.exe" "$tmp/sleeper.c"
echo "wine prefix ready in $(($(date +%s) - begin))s"

# Wine's own programs by their full paths: `wine cmd` is run through
# start.exe, whose ShellExecuteEx can fail ("Internal error") while the
# prefix's services (services.exe, plugplay, winedevice), which the first
# program of a fresh server starts, are still coming up on a busy
# machine; a full path is loaded directly. The first read is polled all
# the same: it is the one that waits for those services.
syscmd='C:\windows\system32\cmd.exe' sysreg='C:\windows\system32\reg.exe'
eventually 120 w "$syscmd" /c echo '%LOCALAPPDATA%' || {
	echo "  wineboot's output:" >&2
	sed 's/^/  | /' "$tmp/boot.log" >&2
	fail "reading %LOCALAPPDATA%"
}
localw=$(cat "$tmp/out")
w "$syscmd" /c echo '%APPDATA%' || fail "reading %APPDATA%"
roamingw=$(cat "$tmp/out")
instw="$localw\\Programs\\tether"
exew="$instw\\tether.exe"
inst=$(HOME="$winehome" winepath -u "$instw" 2>/dev/null)
local=$(HOME="$winehome" winepath -u "$localw" 2>/dev/null)
roaming=$(HOME="$winehome" winepath -u "$roamingw" 2>/dev/null)
lnk="$roaming/Microsoft/Windows/Start Menu/Programs/tether.lnk"
uninstKey='HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\tether'
runKey='HKCU\Software\Microsoft\Windows\CurrentVersion\Run'

# regval KEY NAME: the value's data, as reg query prints it.
regval() {
	w "$sysreg" query "$1" /v "$2" || return 1
	awk -v n="$2" '$1 == n { $1 = ""; $2 = ""; sub(/^ +/, ""); print; found = 1 } END { exit !found }' "$tmp/out"
}

# ---- install the older version, silently ----
w "$tmp/old/tether-${old}-setup-amd64.exe" /S || fail "the installer of $old exited $?"
[ -f "$inst/tether.exe" ] || fail "no $inst/tether.exe"
[ -f "$inst/uninstall.exe" ] || fail "no uninstall.exe"
[ -f "$inst/completions/tether.ps1" ] || fail "no PowerShell completion"
grep -q __complete "$inst/completions/tether.ps1" || fail "the PowerShell completion does not call tether __complete"
ok "installed into $instw"
[ -f "$lnk" ] || fail "no Start-menu entry $lnk"
grep -aq 'tether.exe' "$lnk" || fail "the Start-menu entry does not start tether.exe"
ok "Start-menu entry"
[ "$(regval "$uninstKey" DisplayName)" = tether ] || fail "DisplayName"
[ "$(regval "$uninstKey" DisplayVersion)" = "$old" ] || fail "DisplayVersion is not $old"
[ "$(regval "$uninstKey" UninstallString)" = "\"$instw\\uninstall.exe\"" ] || fail "UninstallString"
[ "$(regval "$uninstKey" InstallLocation)" = "$instw" ] || fail "InstallLocation"
regval "$uninstKey" Publisher >/dev/null || fail "no Publisher"
regval "$uninstKey" EstimatedSize >/dev/null || fail "no EstimatedSize"
ok "uninstall key"
[ "$(regval "$runKey" tether)" = "\"$exew\" service run" ] || fail "the Run value is not \"$exew\" service run"
w "$exew" service status || fail "service status"
grep -q ': installed,' "$tmp/out" || fail "service status does not find the Run value installed and current"
ok "Run value, the one tether service install writes"
w "$exew" version || fail "tether.exe version"
grep -q '^tether ' "$tmp/out" || fail "tether.exe version says no version"
ok "tether.exe version: $(head -1 "$tmp/out")"

# ---- the service and its agents, as a person's ----
# As many agents as the package upgrade's test on Linux runs, each a
# sleeper of an identity of its own.
mkdir -p "$roaming/tether"
sleeperw=$(HOME="$winehome" winepath -w "$tmp/sleeper.exe" 2>/dev/null)
agents=20
ids=$(seq -f 'sleeper%02g' 1 "$agents")
{
	echo agents:
	for id in $ids; do
		printf "  - id: %s\n    identity: %s@wine\n    command: ['%s']\n    stop_timeout: 2s\n" "$id" "$id" "$sleeperw"
	done
} >"$roaming/tether/agents.yaml"
HOME="$winehome" wine "$exew" service run >"$tmp/service.log" 2>&1 &
service=$!
# agentpids: each agent's id and pid (id:pid ...), once every one runs.
agentpids() {
	w "$exew" status --json || return 1
	python3 - "$tmp/out" "$agents" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["agents"]
if len(rows) != int(sys.argv[2]) or any(r["state"] != "running" for r in rows):
    sys.exit(1)
print(" ".join(f'{r["id"]}:{r["pid"]}' for r in sorted(rows, key=lambda r: r["id"])))
PY
}
# serviceversion: the version the running service says it runs.
serviceversion() {
	w "$exew" status --json || return 1
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["service"]["version"])' "$tmp/out"
}
eventually 60 w "$exew" status || fail "the service did not answer"
# shellcheck disable=SC2086 # the ids, one word each
w "$exew" start $ids || fail "tether.exe start $ids"
eventually 120 agentpids >/dev/null || fail "the service did not run its $agents agents"
pids=$(agentpids)
[ "$(serviceversion)" = "$old" ] || fail "the service says it runs $(serviceversion), not $old"
ok "tether.exe service run: the $agents agents run, the service is $old"

# ---- a newer installer over it, the service running ----
# A client asks for the status all along the upgrade, from a copy of the
# old binary outside the installation (the installer moves its files).
cp "$inst/tether.exe" "$tmp/client.exe"
clientw=$(HOME="$winehome" winepath -w "$tmp/client.exe" 2>/dev/null)
(
	while [ ! -e "$tmp/upgraded" ]; do
		rc=0
		HOME="$winehome" wine "$clientw" status >"$tmp/asker.out" 2>&1 || rc=$?
		if [ "$rc" = 0 ]; then echo answered; else echo "refused: exit $rc: $(tr -d '\r' <"$tmp/asker.out" | head -3)"; fi
	done >"$tmp/asked"
) &
asker=$!
began=$(date +%s%N)
w "$setup" /S || { touch "$tmp/upgraded"; wait "$asker"; fail "the installer of $version over $old exited $?"; }
[ "$(regval "$uninstKey" DisplayVersion)" = "$version" ] || { touch "$tmp/upgraded"; wait "$asker"; fail "DisplayVersion is not $version after the upgrade"; }
# The service that ran the old binary handed over to the new one and
# exited; its agents went on.
newversion() { [ "$(serviceversion)" = "$version" ]; }
eventually 30 newversion || { touch "$tmp/upgraded"; wait "$asker"; fail "the service does not say it runs $version after the upgrade"; }
served=$((($(date +%s%N) - began) / 1000000))
touch "$tmp/upgraded"
wait "$asker"
eventually 30 bash -c "! kill -0 $service 2>/dev/null" || fail "the old service still runs after the upgrade"
eventually 60 agentpids >/dev/null || fail "no service answers with its $agents agents running after the upgrade"
[ "$(agentpids)" = "$pids" ] || fail "agents were restarted by the upgrade: before $pids, after $(agentpids)"
[ "$(regval "$runKey" tether)" = "\"$exew\" service run" ] || fail "the upgrade dropped the Run value"
asked=$(grep -c . "$tmp/asked" || true)
refused=$(grep -c '^refused' "$tmp/asked" || true)
[ "$asked" -gt 0 ] || fail "no status request was made during the upgrade"
[ "$refused" = 0 ] || fail "$refused of $asked status requests were refused during the upgrade: $(grep -m3 '^refused' "$tmp/asked")"
ok "upgraded $old -> $version with the service running: the same $agents agents (the same pids), the service says $version within ${served} ms of the installer's start, $asked status requests answered, none refused, the Run value kept"

# ---- uninstall, silently ----
# ours: the command lines of the Windows processes of this prefix that
# run tether, its guardian or the agent (Wine's tasklist lists none).
ours() {
	local pid
	for pid in $(pgrep -f -i 'tether\.exe|tether-guardian\.exe|sleeper\.exe' || true); do
		if grep -qzx "WINEPREFIX=$WINEPREFIX" "/proc/$pid/environ" 2>/dev/null; then
			tr '\0' ' ' <"/proc/$pid/cmdline"
			echo
		fi
	done
}
[ -n "$(ours)" ] || fail "no process of the service or its agent is seen before the uninstall"
# A tether.exe the uninstaller does not stop (the service of a profile
# with no Run value, standing in for an open tray) holds the binary: the
# uninstaller gives up after its wait, with the binary and its Apps &
# features entry left, so that it can be run again.
HOME="$winehome" wine "$exew" --profile held service run >"$tmp/held.log" 2>&1 &
eventually 60 w "$exew" --profile held status || fail "the held profile's service did not answer"
if w "$inst/uninstall.exe" /S "_?=$instw"; then fail "the uninstaller removed tether while it ran"; fi
[ -f "$inst/tether.exe" ] || fail "the uninstaller removed tether.exe while it ran"
w "$sysreg" query "$uninstKey" || fail "the uninstaller dropped its uninstall key while tether ran"
ok "the uninstaller waits, then leaves a tether.exe that still runs, and its uninstall key"
w "$exew" --profile held service stop || fail "stopping the held profile's service"
# The default profile's service, which that run stopped, and its agent
# again, and its Run value.
w "$exew" service install --no-start || fail "tether service install"
HOME="$winehome" wine "$exew" service run >"$tmp/service.log" 2>&1 &
eventually 60 w "$exew" status || fail "the service did not answer again"
# shellcheck disable=SC2086 # the ids, one word each
w "$exew" start $ids || fail "tether.exe start $ids, again"
eventually 120 agentpids >/dev/null || fail "the service did not run its agents again"
w "$sysreg" add "$runKey" /v keep /d 'C:\other.exe' /f || fail "writing another Run value"
w "$inst/uninstall.exe" /S "_?=$instw" || fail "the uninstaller exited $?"
# It returned once the service and its guardians had exited.
if agentpids >/dev/null; then fail "the service still answers after the uninstall"; fi
for f in tether.exe tether.ico completions/tether.ps1; do
	[ ! -e "$inst/$f" ] || fail "$f is left after the uninstall"
done
[ -z "$(find "$inst" -name '*.old*')" ] || fail "binaries set aside by the upgrade are left: $(ls "$inst")"
[ -z "$(ours)" ] || fail "tether or its agent still runs after the uninstall: $(ours)"
[ ! -e "$lnk" ] || fail "the Start-menu entry is left"
if w "$sysreg" query "$uninstKey"; then fail "the uninstall key is left"; fi
if regval "$runKey" tether >/dev/null; then fail "the Run value is left"; fi
regval "$runKey" keep >/dev/null || fail "the uninstaller removed a Run value that was not tether's"
[ -f "$roaming/tether/agents.yaml" ] || fail "the uninstaller removed the user's config"
[ -f "$local/tether/logs/sleeper01.log" ] || [ -n "$(find "$local/tether" -name 'sleeper01*.log' 2>/dev/null)" ] ||
	fail "the uninstaller removed the user's state and logs ($local/tether)"
ok "uninstalled: the service stopped, the files, entry, key and Run value gone; config, state and logs kept"
echo "dist-test-windows passed in $(($(date +%s) - begin))s"
