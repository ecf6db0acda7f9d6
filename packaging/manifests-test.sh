#!/usr/bin/env bash
# manifests-test.sh [VERSION DISTDIR]: checks what cannot run here
# against the artifacts it names: the Scoop manifest (tether.json) is
# JSON whose URLs are the release's zips and whose hashes are theirs,
# the Homebrew formula (tether.rb) is Ruby (ruby -c) whose url and
# sha256 are the source archive's, and the tray's Info.plist is a
# property list that makes an agent app (LSUIElement).
#
# With VERSION and DISTDIR it checks make dist's files; without them it
# makes stand-in zips and a source archive, runs the two hooks on them
# and checks what they wrote. Without ruby it prints a SKIP line (a
# failure with CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ruby >/dev/null 2>&1; then
	echo "SKIP manifests-test: missing ruby (apt-get install ruby)"
	[ "${CI:-}" = true ] && { echo "CI=true: the formula must be checked"; exit 1; }
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tether-manifests.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ $# -eq 2 ]; then
	version=$1 dist=$(cd "$2" && pwd)
else
	version=1.2.3 dist="$tmp/dist"
	mkdir -p "$dist"
	for arch in amd64 arm64; do
		tree="$tmp/tether_${version}_windows_$arch"
		mkdir -p "$tree"
		echo "stand-in for the $arch binary" >"$tree/tether.exe"
		(cd "$tmp" && zip -q -X -r "$dist/tether_${version}_windows_$arch.zip" "tether_${version}_windows_$arch")
	done
	git archive --format=tar --prefix="tether_${version}_src/" HEAD | gzip -n >"$dist/tether_${version}_src.tar.gz"
	bash packaging/scoop/manifest.sh "$version" "$dist" >/dev/null
	bash packaging/homebrew/formula.sh "$version" "$dist" >/dev/null
fi

ruby -c "$dist/tether.rb" >/dev/null || { echo "FAIL manifests-test: tether.rb is not Ruby"; exit 1; }
python3 - "$version" "$dist" packaging/macos/Info.plist <<'PY'
import hashlib, json, os, plistlib, re, sys, zipfile

version, dist, plist = sys.argv[1:]
release = f"https://github.com/tether-dev/tether/releases/download/v{version}"
failures = []

def check(cond, what):
    if not cond:
        failures.append(what)

def sha256(name):
    with open(os.path.join(dist, name), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()

# Scoop
with open(os.path.join(dist, "tether.json")) as f:
    m = json.load(f)
check(m.get("version") == version, f"tether.json: version {m.get('version')!r}, want {version!r}")
check(m.get("bin") == "tether.exe" or "tether.exe" in m.get("bin", []), "tether.json: tether.exe is not in bin")
for key, arch in (("64bit", "amd64"), ("arm64", "arm64")):
    name = f"tether_{version}_windows_{arch}.zip"
    e = m.get("architecture", {}).get(key)
    if e is None:
        check(not os.path.exists(os.path.join(dist, name)), f"tether.json: no {key} entry, yet {name} is there")
        continue
    check(e.get("url") == f"{release}/{name}", f"tether.json: {key} url {e.get('url')!r}")
    check(e.get("hash") == sha256(name), f"tether.json: {key} hash is not {name}'s sha256")
    with zipfile.ZipFile(os.path.join(dist, name)) as z:
        exe = (e["extract_dir"] + "/" if "extract_dir" in e else "") + "tether.exe"
        check(exe in z.namelist(), f"tether.json: {key} finds no {exe} in {name}")
check("64bit" in m.get("architecture", {}), "tether.json: no 64bit entry")

# Homebrew
with open(os.path.join(dist, "tether.rb")) as f:
    rb = f.read()
src = f"tether_{version}_src.tar.gz"
url = re.search(r'^\s*url "([^"]+)"', rb, re.M)
sha = re.search(r'^\s*sha256 "([0-9a-f]{64})"', rb, re.M)
check(url and url.group(1) == f"{release}/{src}", f"tether.rb: url {url and url.group(1)!r}")
check(sha and sha.group(1) == sha256(src), f"tether.rb: sha256 is not {src}'s")
check('depends_on "go" => :build' in rb, "tether.rb: no build dependency on go")
check('ENV["CGO_ENABLED"] = "1"' in rb, "tether.rb: not built with cgo")
check(re.search(r'service do\n\s+run \[opt_bin/"tether", "service", "run"\]', rb), "tether.rb: no service running tether service run")

# The tray's app bundle
with open(plist, "rb") as f:
    p = plistlib.load(f)
check(p.get("CFBundleExecutable") == "tether", "Info.plist: CFBundleExecutable is not tether")
check(p.get("CFBundleIdentifier") == "com.github.tether-dev.tether", "Info.plist: CFBundleIdentifier")
check(p.get("CFBundlePackageType") == "APPL", "Info.plist: not an application")
check(p.get("LSUIElement") is True, "Info.plist: LSUIElement is not true (the tray would have a Dock icon)")

for f in failures:
    print("FAIL manifests-test:", f)
sys.exit(1 if failures else 0)
PY
echo "manifests-test: tether.json, tether.rb and Info.plist agree with the artifacts"
