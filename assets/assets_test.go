package assets

import (
	"bytes"
	"encoding/binary"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "write the icons out again (go generate)")

// TestIconsMatchDrawing: the embedded icons are what draw.go draws. With
// -update (go generate) it writes them instead.
func TestIconsMatchDrawing(t *testing.T) {
	if *update {
		for _, s := range all {
			write(t, s.String()+".png", encodePNG(s, pngSize))
			write(t, s.String()+".ico", encodeICO(s))
		}
		// The embedded files are those of this test binary's build:
		// the next run checks what was just written.
		t.Logf("wrote %d icons into icons/", 2*len(all))
		return
	}
	for _, s := range all {
		got := decodePNG(t, s.String()+".png", PNG(s))
		if got.Bounds().Dx() != pngSize || got.Bounds().Dy() != pngSize {
			t.Errorf("%s.png is %v, want %dx%d", s, got.Bounds(), pngSize, pngSize)
		}
		// Pixels, not bytes: the PNG encoder's output may change with Go.
		samePixels(t, s.String()+".png", got, draw(s, pngSize))

		entries := parseICO(t, s.String()+".ico", ICO(s))
		if len(entries) != len(icoSizes) {
			t.Fatalf("%s.ico has %d images, want %d", s, len(entries), len(icoSizes))
		}
		for i, size := range icoSizes {
			img := decodePNG(t, s.String()+".ico", entries[i].data)
			if img.Bounds().Dx() != size || int(entries[i].w) != size%256 {
				t.Errorf("%s.ico image %d: %v, directory says %d, want %d", s, i, img.Bounds(), entries[i].w, size)
			}
			samePixels(t, s.String()+".ico", img, draw(s, size))
		}
	}
}

// TestIconsDiffer: each state has an icon of its own, with transparent
// corners (the tile is rounded). Legibility is TestIconsLegible's.
func TestIconsDiffer(t *testing.T) {
	seen := map[string]State{}
	for _, s := range all {
		if prev, ok := seen[string(PNG(s))]; ok {
			t.Errorf("%s and %s have the same icon", prev, s)
		}
		seen[string(PNG(s))] = s
		img := draw(s, pngSize)
		for _, p := range []image.Point{{0, 0}, {pngSize - 1, 0}, {0, pngSize - 1}, {pngSize - 1, pngSize - 1}} {
			if a := img.NRGBAAt(p.X, p.Y).A; a != 0 {
				t.Errorf("%s: corner %v alpha %d, want transparent", s, p, a)
			}
		}
	}
	if string(Tray(Running)) != string(PNG(Running)) && string(Tray(Running)) != string(ICO(Running)) {
		t.Error("Tray returns neither the PNG nor the ICO")
	}
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("icons", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func decodePNG(t *testing.T, name string, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return img
}

func samePixels(t *testing.T, name string, got image.Image, want *image.NRGBA) {
	t.Helper()
	if got.Bounds() != want.Bounds() {
		t.Errorf("%s: bounds %v, drawing %v (run go generate ./assets)", name, got.Bounds(), want.Bounds())
		return
	}
	for y := range want.Bounds().Dy() {
		for x := range want.Bounds().Dx() {
			if g, w := got.At(x, y), want.At(x, y); !sameColor(g, w) {
				t.Errorf("%s: pixel (%d,%d) is %v, drawing has %v (run go generate ./assets)", name, x, y, g, w)
				return
			}
		}
	}
}

func sameColor(a, b interface{ RGBA() (r, g, b, a uint32) }) bool {
	ar, ag, ab, aa := a.RGBA()
	br, bg, bb, ba := b.RGBA()
	return ar == br && ag == bg && ab == bb && aa == ba
}

type icoEntry struct {
	w, h uint8
	data []byte
}

// parseICO reads an ICO directory and checks its header.
func parseICO(t *testing.T, name string, b []byte) []icoEntry {
	t.Helper()
	le := binary.LittleEndian
	if len(b) < 6 || le.Uint16(b) != 0 || le.Uint16(b[2:]) != 1 {
		t.Fatalf("%s: not an ICO header: % x", name, b[:min(len(b), 6)])
	}
	n := int(le.Uint16(b[4:]))
	var out []icoEntry
	for i := range n {
		e := b[6+16*i:]
		if len(e) < 16 {
			t.Fatalf("%s: directory entry %d is cut short", name, i)
		}
		size, off := le.Uint32(e[8:]), le.Uint32(e[12:])
		if le.Uint16(e[4:]) != 1 || le.Uint16(e[6:]) != 32 || int(off)+int(size) > len(b) {
			t.Fatalf("%s: bad directory entry %d: % x", name, i, e[:16])
		}
		out = append(out, icoEntry{w: e[0], h: e[1], data: b[off : off+size]})
	}
	return out
}
