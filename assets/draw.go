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
// fits the notification area at the current DPI.
var icoSizes = []int{16, 32, 64}

// Colours. A filled disc in the state's colour inside two rings, white
// then near-black, reads on light and dark panels alike; the glyph (none,
// a square, an exclamation mark) tells the states apart without colour.
var (
	green = color.NRGBA{0x2d, 0xa4, 0x4e, 0xff}
	grey  = color.NRGBA{0x8c, 0x95, 0x9f, 0xff}
	red   = color.NRGBA{0xcf, 0x22, 0x2e, 0xff}
	white = color.NRGBA{0xff, 0xff, 0xff, 0xff}
	ink   = color.NRGBA{0x1f, 0x23, 0x28, 0xff}
)

// draw renders the icon of s at size×size pixels, anti-aliased by 4×4
// supersampling.
func draw(s State, size int) *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	// Each ring is at least one pixel wide, so small icons keep their edge.
	ring := math.Max(0.045, 1/float64(size))
	for y := range size {
		for x := range size {
			var r, g, b, a float64
			for sy := range ss {
				for sx := range ss {
					u := (float64(x) + (float64(sx)+0.5)/ss) / float64(size)
					v := (float64(y) + (float64(sy)+0.5)/ss) / float64(size)
					c := sample(s, u, v, ring)
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

// sample is the colour of the icon at (u, v) in the unit square.
func sample(s State, u, v, ring float64) color.NRGBA {
	const outer = 0.49
	d := math.Hypot(u-0.5, v-0.5)
	switch {
	case d > outer:
		return color.NRGBA{}
	case d > outer-ring:
		return ink
	case d > outer-2*ring:
		return white
	}
	dx, dy := math.Abs(u-0.5), v-0.5
	switch s {
	case Stopped:
		if dx <= 0.13 && math.Abs(dy) <= 0.13 {
			return white
		}
		return grey
	case Failed:
		if dx <= 0.06 && dy >= -0.25 && dy <= 0.08 || math.Hypot(u-0.5, v-0.70) <= 0.07 {
			return white
		}
		return red
	}
	return green
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
