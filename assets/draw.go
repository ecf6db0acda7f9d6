package assets

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"math"
)

// pngSize is the edge of the PNG icons: large enough for HiDPI panels,
// which scale it down.
const pngSize = 64

// icoSizes are the images in each ICO file; Windows picks the one that
// fits the notification area at the current DPI (16 px at 100 %, 20 at
// 125 %, 24 at 150 %, 32 at 200 %).
var icoSizes = []int{16, 20, 24, 32, 48, 64}

// The drawing, in the unit square. The mark is a rounded tile in tether's
// blue with a white "t"; the state is a disc in the bottom right corner,
// cut out of the tile by a transparent gap so that it stands apart from
// the tile on any panel. Every fill has a relative luminance of about
// 0.215, which keeps a contrast of at least 3:1 (WCAG's bar for graphics)
// against white and light grey panels as well as against black and dark
// grey ones, and nearly 4:1 for the white glyphs on it.
// The badges differ in hue and in glyph, so they are told apart without
// colour too: a check, clock hands, an exclamation mark, a bar.
const (
	tileMargin = 0.03
	tileRadius = 0.22

	badgeX, badgeY = 0.72, 0.72
	badgeR         = 0.28
	badgeGap       = 0.09 // the transparent ring around the badge
)

var (
	tileBlue = color.NRGBA{0x53, 0x7a, 0xe6, 0xff}
	white    = color.NRGBA{0xff, 0xff, 0xff, 0xff}

	green = color.NRGBA{0x22, 0x92, 0x48, 0xff}
	amber = color.NRGBA{0xc1, 0x69, 0x05, 0xff}
	red   = color.NRGBA{0xe1, 0x4a, 0x54, 0xff}
	grey  = color.NRGBA{0x77, 0x81, 0x8b, 0xff}
)

// badgeColor is the fill of s's badge.
func badgeColor(s State) color.NRGBA {
	switch s {
	case Running:
		return green
	case Busy:
		return amber
	case Failed:
		return red
	}
	return grey
}

// draw renders the icon of s at size×size pixels, anti-aliased by 4×4
// supersampling. The plain mark (no badge) is draw(Mark, size).
func draw(s State, size int) *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			var r, g, b, a float64
			for sy := range ss {
				for sx := range ss {
					u := (float64(x) + (float64(sx)+0.5)/ss) / float64(size)
					v := (float64(y) + (float64(sy)+0.5)/ss) / float64(size)
					c := sample(s, u, v)
					fa := float64(c.A) / 255
					r += float64(c.R) * fa
					g += float64(c.G) * fa
					b += float64(c.B) * fa
					a += fa
				}
			}
			if a == 0 {
				continue
			}
			img.SetNRGBA(x, y, color.NRGBA{
				R: uint8(math.Round(r / a)),
				G: uint8(math.Round(g / a)),
				B: uint8(math.Round(b / a)),
				A: uint8(math.Round(a / ss / ss * 255)),
			})
		}
	}
	return img
}

// sample is the colour of the icon of s at (u, v) in the unit square.
func sample(s State, u, v float64) color.NRGBA {
	if s != Mark {
		d := math.Hypot(u-badgeX, v-badgeY)
		switch {
		case d <= badgeR:
			// Badge-local coordinates in units of its radius.
			if inGlyph(s, (u-badgeX)/badgeR, (v-badgeY)/badgeR) {
				return white
			}
			return badgeColor(s)
		case d <= badgeR+badgeGap:
			return color.NRGBA{}
		}
	}
	if !inRoundRect(u, v, tileMargin, 1-tileMargin, tileRadius) {
		return color.NRGBA{}
	}
	if inT(u, v) {
		return white
	}
	return tileBlue
}

// inT is the mark's "t": a stem with a crossbar, its foot turning right.
func inT(u, v float64) bool {
	const stemL, stemR = 0.27, 0.42
	switch {
	case u >= stemL && u <= stemR && v >= 0.14 && v <= 0.62:
		return true // the stem
	case u >= 0.14 && u <= 0.62 && v >= 0.30 && v <= 0.43:
		return true // the crossbar
	}
	// The foot: a quarter ring from the stem's bottom towards the right.
	const cx, cy, outer, inner = 0.57, 0.62, 0.30, 0.15
	if u <= cx && v >= cy {
		d := math.Hypot(u-cx, v-cy)
		return d <= outer && d >= inner
	}
	return false
}

// inGlyph is the white glyph of s's badge, in badge units (the badge is
// the unit disc).
func inGlyph(s State, x, y float64) bool {
	const w = 0.15 // half a stroke
	switch s {
	case Running: // a check mark
		return nearSegment(x, y, -0.48, 0.02, -0.14, 0.38, w) || nearSegment(x, y, -0.14, 0.38, 0.50, -0.36, w)
	case Busy: // clock hands at three o'clock
		return nearSegment(x, y, 0, 0, 0, -0.58, w) || nearSegment(x, y, 0, 0, 0.48, 0, w)
	case Failed: // an exclamation mark
		return nearSegment(x, y, 0, -0.56, 0, 0.10, w+0.02) || math.Hypot(x, y-0.46) <= w+0.03
	}
	// Unreachable: a bar, as on a no-entry sign.
	return math.Abs(x) <= 0.56 && math.Abs(y) <= w
}

// nearSegment reports whether (x, y) lies within w of the segment from
// (x0, y0) to (x1, y1): a stroke with round ends.
func nearSegment(x, y, x0, y0, x1, y1, w float64) bool {
	dx, dy := x1-x0, y1-y0
	t := ((x-x0)*dx + (y-y0)*dy) / (dx*dx + dy*dy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(x-(x0+t*dx), y-(y0+t*dy)) <= w
}

// inRoundRect reports whether (u, v) lies in the square [lo, hi]² with
// corners rounded by r.
func inRoundRect(u, v, lo, hi, r float64) bool {
	if u < lo || u > hi || v < lo || v > hi {
		return false
	}
	cx := math.Max(lo+r, math.Min(hi-r, u))
	cy := math.Max(lo+r, math.Min(hi-r, v))
	return math.Hypot(u-cx, v-cy) <= r
}

// encodePNG draws s at size and encodes it as PNG.
func encodePNG(s State, size int) []byte {
	var buf bytes.Buffer
	// Encoding an in-memory NRGBA image cannot fail.
	_ = png.Encode(&buf, draw(s, size))
	return buf.Bytes()
}

// encodeICO draws s at every size of icoSizes and wraps the PNGs in an ICO
// container (PNG entries are understood since Windows Vista).
func encodeICO(s State) []byte {
	var pngs [][]byte
	for _, size := range icoSizes {
		pngs = append(pngs, encodePNG(s, size))
	}
	var buf bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { _ = binary.Write(&buf, le, v) }
	w(uint16(0))         // reserved
	w(uint16(1))         // type: icon
	w(uint16(len(pngs))) // count
	offset := 6 + 16*len(pngs)
	for i, size := range icoSizes {
		dim := uint8(size)
		if size >= 256 {
			dim = 0 // 0 means 256
		}
		w(dim)        // width
		w(dim)        // height
		w(uint8(0))   // palette size
		w(uint8(0))   // reserved
		w(uint16(1))  // colour planes
		w(uint16(32)) // bits per pixel
		w(uint32(len(pngs[i])))
		w(uint32(offset))
		offset += len(pngs[i])
	}
	for _, p := range pngs {
		buf.Write(p)
	}
	return buf.Bytes()
}
