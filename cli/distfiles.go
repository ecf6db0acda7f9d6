package cli

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/install"
)

// distfilesCmd is the hidden command make dist runs (packaging/dist.sh)
// to write the files of the release archives and Linux packages that are
// made from the code itself, so that they cannot drift from it: the man
// page (from the help text), the shell completion scripts, the packaged
// systemd user unit and the application icons.
//
//	tether __distfiles -out DIR -version 1.2.3 -date 2026-12-05
//
// DIR then holds tether.1, tether.1.gz, completions/tether.{bash,zsh,
// fish,ps1}, tether.service and icons/hicolor/{NxN,scalable}/apps/.
// Every file's bytes depend on the arguments alone.
const distfilesCmd = "__distfiles"

func (inv *invocation) distfiles(args []string) int {
	fs := flag.NewFlagSet(distfilesCmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "", "")
	version := fs.String("version", "", "")
	date := fs.String("date", "", "")
	if err := fs.Parse(args); err != nil || *out == "" || *version == "" || *date == "" || fs.NArg() > 0 {
		return inv.commandUsage(nil, fmt.Sprintf("usage: tether %s -out DIR -version VERSION -date YYYY-MM-DD", distfilesCmd))
	}
	if err := writeDistfiles(*out, distfiles(*version, *date)); err != nil {
		return inv.fail("%v", err)
	}
	return ExitOK
}

// distfiles returns every file, by its path under the output directory.
func distfiles(version, date string) map[string][]byte {
	var man bytes.Buffer
	WriteMan(&man, version, date)
	m := map[string][]byte{
		"tether.1":                               man.Bytes(),
		"tether.1.gz":                            gz(man.Bytes()),
		"tether.service":                         install.PackagedUnit(),
		"icons/hicolor/scalable/apps/tether.svg": assets.AppSVG(),
	}
	for name, b := range CompletionScripts() {
		m["completions/"+name] = b
	}
	for _, n := range assets.AppIconSizes {
		m[fmt.Sprintf("icons/hicolor/%dx%d/apps/tether.png", n, n)] = assets.AppPNG(n)
	}
	return m
}

// gz compresses b at the best level, with no name and no time in the
// header: the same bytes every time.
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func writeDistfiles(dir string, files map[string][]byte) error {
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
