#!/usr/bin/env bash
# manifest.sh VERSION DISTDIR: writes DISTDIR/tether.json, the Scoop
# manifest of the release: the windows zips' release URLs and sha256 for
# 64bit and arm64 (arm64 when its zip is there), tether.exe on the PATH,
# and a Start-menu shortcut to the tray.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 VERSION DISTDIR" >&2
	exit 2
fi
version=$1 dist=$2
[ -f "$dist/tether_${version}_windows_amd64.zip" ] ||
	{ echo "manifest.sh: no $dist/tether_${version}_windows_amd64.zip" >&2; exit 1; }
python3 - "$version" "$dist" <<'PY'
import hashlib, json, os, sys, zipfile

version, dist = sys.argv[1], sys.argv[2]
base = "https://github.com/tether-dev/tether/releases/download"

def entry(arch):
    name = f"tether_{version}_windows_{arch}.zip"
    path = os.path.join(dist, name)
    with open(path, "rb") as f:
        e = {"url": f"{base}/v{version}/{name}", "hash": hashlib.sha256(f.read()).hexdigest()}
    # The binaries are at the zip's top or in its one top directory.
    with zipfile.ZipFile(path) as z:
        tops = {n.split("/", 1)[0] for n in z.namelist()}
    if len(tops) == 1 and "tether.exe" not in tops:
        e["extract_dir"] = tops.pop()
    return e

arches = {"64bit": "amd64", "arm64": "arm64"}
present = {k: a for k, a in arches.items()
           if os.path.exists(os.path.join(dist, f"tether_{version}_windows_{a}.zip"))}
manifest = {
    "version": version,
    "description": "System-tray supervisor of local agent processes",
    "homepage": "https://github.com/tether-dev/tether",
    "license": "Apache-2.0",
    "architecture": {k: entry(a) for k, a in present.items()},
    "bin": "tether.exe",
    "shortcuts": [["tether.exe", "tether", "tray"]],
    "notes": "PowerShell completion: add `tether completion powershell | Out-String | Invoke-Expression` to $PROFILE.",
    "checkver": "github",
    "autoupdate": {
        "architecture": {
            k: {key: v.replace(version, "$version") for key, v in entry(a).items() if key != "hash"}
            for k, a in present.items()
        }
    },
}
with open(os.path.join(dist, "tether.json"), "w") as f:
    json.dump(manifest, f, indent=4)
    f.write("\n")
PY
echo "wrote $dist/tether.json"
