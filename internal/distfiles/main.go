// Command distfiles writes the files of tether's release archives and
// Linux packages that are made from the code itself, so that they cannot
// drift from it: the man page (from the help text), the shell completion
// scripts, the packaged systemd user unit and the application icons.
// make dist runs it:
//
//	go run ./internal/distfiles -out DIR -version 1.2.3 -date 2026-12-05
//
// DIR then holds tether.1, tether.1.gz, completions/tether.{bash,zsh,
// fish,ps1}, tether.service and icons/hicolor/{NxN,scalable}/apps/.
// Every file's bytes depend on the arguments alone.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/cli"
	"github.com/tether-dev/tether/install"
)

func main() {
	out := flag.String("out", "", "the directory to write into")
	version := flag.String("version", "", "the version, for the man page")
	date := flag.String("date", "", "the release date, YYYY-MM-DD, for the man page")
	flag.Parse()
	if *out == "" || *version == "" || *date == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: distfiles -out DIR -version VERSION -date YYYY-MM-DD")
		os.Exit(2)
	}
	if err := write(*out, files(*version, *date)); err != nil {
		fmt.Fprintln(os.Stderr, "distfiles:", err)
		os.Exit(1)
	}
}

// files returns every file, by its path under the output directory.
func files(version, date string) map[string][]byte {
	var man bytes.Buffer
	cli.WriteMan(&man, version, date)
	m := map[string][]byte{
		"tether.1":                               man.Bytes(),
		"tether.1.gz":                            gz(man.Bytes()),
		"tether.service":                         install.PackagedUnit(),
		"icons/hicolor/scalable/apps/tether.svg": assets.AppSVG(),
	}
	for name, b := range cli.CompletionScripts() {
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

func write(dir string, files map[string][]byte) error {
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
