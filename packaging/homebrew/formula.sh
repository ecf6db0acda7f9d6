#!/usr/bin/env bash
# formula.sh VERSION DISTDIR: writes DISTDIR/tether.rb, the Homebrew
# formula of the release. It builds from the source archive
# (tether_VERSION_src.tar.gz, at its release URL, with its sha256) with
# cgo, so that the tray works, and installs tether (and tether-guardian
# where the source has it), tether(1), the bash, zsh and fish
# completions, Tether.app (the tray as an agent app, packaging/macos)
# and a service for `brew services` that runs `tether service run`.
#
# The commit is the one the archive was made from (git archive records
# it); the date is SOURCE_DATE_EPOCH's (make dist exports it), or the
# commit's.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 VERSION DISTDIR" >&2
	exit 2
fi
version=$1 dist=$(cd "$2" && pwd)
src="$dist/tether_${version}_src.tar.gz"
[ -f "$src" ] || { echo "formula.sh: no $src" >&2; exit 1; }
cd "$(dirname "$0")/../.."

sha=$(sha256sum "$src" | cut -d' ' -f1)
commit=$(gzip -dc "$src" | git get-tar-commit-id 2>/dev/null || true)
[ -n "$commit" ] || commit=$(git rev-parse HEAD)
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
else
	date=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d "$commit")
fi

cat >"$dist/tether.rb" <<EOF
# Homebrew formula of tether $version, written by make dist.
class Tether < Formula
  desc "System-tray supervisor of local agent processes"
  homepage "https://github.com/tether-dev/tether"
  url "https://github.com/tether-dev/tether/releases/download/v${version}/tether_${version}_src.tar.gz"
  sha256 "${sha}"
  license "Apache-2.0"

  depends_on "go" => :build

  def install
    buildinfo = "github.com/tether-dev/tether/internal/buildinfo"
    ldflags = "-s -w -X #{buildinfo}.Version=#{version} " \\
              "-X #{buildinfo}.Commit=${commit} -X #{buildinfo}.Date=${date}"
    # cgo: the tray speaks to the macOS menu bar through Cocoa.
    ENV["CGO_ENABLED"] = "1"
    system "go", "build", *std_go_args(ldflags: ldflags), "."
    if File.directory?("guardian/cmd/tether-guardian")
      # The guardian needs no Cocoa, and starts faster without cgo.
      with_env(CGO_ENABLED: "0") do
        system "go", "build", *std_go_args(ldflags: ldflags, output: bin/"tether-guardian"),
               "./guardian/cmd/tether-guardian"
      end
    end

    # The man page and completions come from the code itself.
    system "go", "run", "./internal/distfiles", "-out", buildpath/"distfiles",
           "-version", version.to_s, "-date", "${date}"
    man1.install "distfiles/tether.1"
    bash_completion.install "distfiles/completions/tether.bash" => "tether"
    zsh_completion.install "distfiles/completions/tether.zsh" => "_tether"
    fish_completion.install "distfiles/completions/tether.fish"

    # Tether.app: the tray with no Dock icon (LSUIElement).
    contents = prefix/"Tether.app/Contents"
    inreplace "packaging/macos/Info.plist", "@VERSION@", version.to_s
    contents.install "packaging/macos/Info.plist"
    # A copy, not a link: macOS finds the bundle from its executable's
    # real path.
    (contents/"MacOS").mkpath
    cp bin/"tether", contents/"MacOS/tether"
  end

  def caveats
    <<~EOS
      The tray is #{opt_prefix}/Tether.app; to find it in Launchpad:
        ln -s #{opt_prefix}/Tether.app ~/Applications/
      Its menu has "Start at login". Or run the service alone:
        brew services start tether
    EOS
  end

  service do
    run [opt_bin/"tether", "service", "run"]
    keep_alive successful_exit: false
    environment_variables PATH: std_service_path_env
    log_path var/"log/tether.log"
    error_log_path var/"log/tether.log"
  end

  test do
    assert_match "tether #{version}", shell_output("#{bin}/tether version")
    assert_match "__complete", shell_output("#{bin}/tether completion zsh")
  end
end
EOF
echo "wrote $dist/tether.rb"
