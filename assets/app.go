package assets

import (
	"fmt"
	"strings"
)

// AppIconSizes are the sizes of the application icon in the hicolor
// theme of the Linux packages (apps/tether.png in each NxN directory).
var AppIconSizes = []int{16, 22, 24, 32, 48, 64, 128, 256}

// AppPNG is the application icon, the mark without a badge, drawn at
// size×size pixels.
func AppPNG(size int) []byte { return encodePNG(Mark, size) }

// AppSVG is the application icon as SVG (hicolor's scalable/apps), drawn
// from the same shapes as the PNGs: the rounded tile and the "t" of inT,
// in a 100×100 view box.
func AppSVG() []byte {
	const stemL, stemR, stemTop, stemBottom = 0.27, 0.42, 0.14, 0.62
	const barL, barR, barTop, barBottom = 0.14, 0.62, 0.30, 0.43
	const cx, cy, outer, inner = 0.57, 0.62, 0.30, 0.15
	n := func(v float64) string {
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v*100), "0"), ".")
	}
	hex := func(r, g, b uint8) string { return fmt.Sprintf("#%02x%02x%02x", r, g, b) }
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 100 100">` + "\n")
	b.WriteString("  <title>tether</title>\n")
	fmt.Fprintf(&b, `  <rect x="%s" y="%s" width="%s" height="%s" rx="%s" fill="%s"/>`+"\n",
		n(tileMargin), n(tileMargin), n(1-2*tileMargin), n(1-2*tileMargin), n(tileRadius), hex(tileBlue.R, tileBlue.G, tileBlue.B))
	fmt.Fprintf(&b, `  <g fill="%s">`+"\n", hex(white.R, white.G, white.B))
	fmt.Fprintf(&b, `    <rect x="%s" y="%s" width="%s" height="%s"/>`+"\n", n(stemL), n(stemTop), n(stemR-stemL), n(stemBottom-stemTop))
	fmt.Fprintf(&b, `    <rect x="%s" y="%s" width="%s" height="%s"/>`+"\n", n(barL), n(barTop), n(barR-barL), n(barBottom-barTop))
	// The foot: the quarter ring below and left of (cx, cy).
	fmt.Fprintf(&b, `    <path d="M %s %s A %s %s 0 0 0 %s %s L %s %s A %s %s 0 0 1 %s %s Z"/>`+"\n",
		n(cx-outer), n(cy), n(outer), n(outer), n(cx), n(cy+outer), n(cx), n(cy+inner), n(inner), n(inner), n(cx-inner), n(cy))
	b.WriteString("  </g>\n</svg>\n")
	return []byte(b.String())
}
