// Command sbom writes a CycloneDX 1.5 bill of materials (JSON) of the Go
// modules linked into tether's release binaries, read from the binaries'
// own build information (so it lists what was linked, for every target,
// and nothing only the tests use). make dist runs it:
//
//	go run ./internal/sbom -version 1.2.3 -time 1764928923 BINARY...
//
// Its output depends on its arguments and the binaries alone: the
// timestamp is the given time (SOURCE_DATE_EPOCH), the serial number a
// hash of the rest.
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

const mainModule = "github.com/tether-dev/tether"

func main() {
	version := flag.String("version", "", "tether's version")
	epoch := flag.Int64("time", 0, "the SBOM's timestamp, in seconds since 1970 (SOURCE_DATE_EPOCH)")
	flag.Parse()
	if *version == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: sbom -version VERSION -time EPOCH BINARY...")
		os.Exit(2)
	}
	mods := map[string]string{}
	for _, bin := range flag.Args() {
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sbom: %s: %v\n", bin, err)
			os.Exit(1)
		}
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			mods[d.Path] = d.Version
		}
		mods["golang.org/toolchain"] = bi.GoVersion
	}
	if err := write(os.Stdout, *version, time.Unix(*epoch, 0).UTC(), mods); err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(1)
	}
}

type component struct {
	Type    string `json:"type"`
	BOMRef  string `json:"bom-ref"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
	License []any  `json:"licenses,omitempty"`
}

// purl is the package URL of a Go module (the purl spec's golang type).
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + version
}

// write writes the BOM: tether as its subject, every module as a
// library it depends on, in path order.
func write(w io.Writer, version string, at time.Time, mods map[string]string) error {
	self := component{Type: "application", Name: mainModule, Version: version, PURL: purl(mainModule, "v"+strings.TrimPrefix(version, "v")),
		License: []any{map[string]any{"license": map[string]string{"id": "Apache-2.0"}}}}
	self.BOMRef = self.PURL
	var comps []component
	var refs []string
	for _, p := range slices.Sorted(maps.Keys(mods)) {
		c := component{Type: "library", Name: p, Version: mods[p], PURL: purl(p, mods[p])}
		c.BOMRef = c.PURL
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	body := map[string]any{
		"metadata": map[string]any{
			"timestamp": at.Format(time.RFC3339),
			"component": self,
		},
		"components":   comps,
		"dependencies": []any{map[string]any{"ref": self.BOMRef, "dependsOn": refs}},
	}
	content, err := json.Marshal(body)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(content)
	// A version-5 style UUID from the content: the same BOM, the same
	// serial number.
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	serial := fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	doc := map[string]any{
		"bomFormat":    "CycloneDX",
		"specVersion":  "1.5",
		"serialNumber": serial,
		"version":      1,
	}
	maps.Copy(doc, body)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
