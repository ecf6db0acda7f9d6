package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// The BOM is valid JSON of CycloneDX's shape, names every module with its
// purl, and is the same bytes for the same input.
func TestWrite(t *testing.T) {
	mods := map[string]string{"gopkg.in/yaml.v3": "v3.0.1", "golang.org/x/sys": "v0.50.0"}
	at := time.Unix(1764928923, 0).UTC()
	var a, b bytes.Buffer
	if err := write(&a, "1.2.3", at, mods); err != nil {
		t.Fatal(err)
	}
	if err := write(&b, "1.2.3", at, mods); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two BOMs of the same input differ")
	}
	var doc struct {
		BOMFormat, SpecVersion, SerialNumber string
		Metadata                             struct {
			Timestamp string
			Component struct{ Name, Version, PURL string }
		}
		Components []struct{ Name, Version, PURL string }
	}
	if err := json.Unmarshal(a.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.BOMFormat != "CycloneDX" || doc.SpecVersion != "1.5" || len(doc.SerialNumber) != len("urn:uuid:")+36 {
		t.Errorf("header %+v", doc)
	}
	if doc.Metadata.Timestamp != "2025-12-05T10:02:03Z" || doc.Metadata.Component.PURL != "pkg:golang/github.com/tether-dev/tether@v1.2.3" {
		t.Errorf("metadata %+v", doc.Metadata)
	}
	if len(doc.Components) != 2 || doc.Components[0].PURL != "pkg:golang/golang.org/x/sys@v0.50.0" || doc.Components[1].Name != "gopkg.in/yaml.v3" {
		t.Errorf("components %+v", doc.Components)
	}
}
