package assets

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"testing"
)

// Panels the icons must read on: white and light grey (Xfce, Windows
// light, macOS light), black (GNOME's top bar) and dark greys (Windows
// dark, Breeze dark).
var panels = []struct {
	name string
	c    color.NRGBA
}{
	{"white", color.NRGBA{0xff, 0xff, 0xff, 0xff}},
	{"light grey", color.NRGBA{0xec, 0xec, 0xec, 0xff}},
	{"black", color.NRGBA{0x00, 0x00, 0x00, 0xff}},
	{"dark grey", color.NRGBA{0x20, 0x20, 0x20, 0xff}},
	{"grey", color.NRGBA{0x30, 0x30, 0x30, 0xff}},
}

// minContrast is WCAG 2's bar for graphical objects (1.4.11).
const minContrast = 3.0

// TestIconsLegible renders every tray icon at 16 and 24 px (drawn at that
// size, as the ICO holds them, and scaled down from the 64 px PNG, as a
// Linux panel shows it) and checks, on light and dark panels alike, that
// the tile and the badge stand out from the panel, that each glyph stands
// out from its ground, that the badge is cut apart from the tile, and that
// the badges differ from each other in colour and in shape.
func TestIconsLegible(t *testing.T) {
	for _, size := range []int{16, 24} {
		for _, how := range []string{"drawn", "scaled"} {
			masks := map[State][]bool{}
			for _, s := range States {
				img := draw(s, size)
				if how == "scaled" {
					img = resample(draw(s, pngSize), size)
				}
				name := fmt.Sprintf("%s %dpx %s", s, size, how)
				for _, p := range panels {
					checkOnPanel(t, name+" on "+p.name, composite(img, p.c), size, p.c)
				}
				checkBadgeCut(t, name, img, size)
				masks[s] = glyphMask(composite(img, panels[0].c), size)
			}
			// Distinct shapes: every two glyphs differ in at least
			// a few pixels.
			for i, a := range States {
				for _, b := range States[i+1:] {
					if d := hamming(masks[a], masks[b]); d < size/4 {
						t.Errorf("%dpx %s: the glyphs of %s and %s differ in %d pixels, want at least %d", size, how, a, b, d, size/4)
					}
				}
			}
		}
	}
	// Distinct colours: every two badge fills are far apart.
	for i, a := range States {
		for _, b := range States[i+1:] {
			if d := rgbDistance(badgeColor(a), badgeColor(b)); d < 60 {
				t.Errorf("the badges of %s and %s are too alike in colour (distance %.0f, want >= 60)", a, b, d)
			}
		}
	}
}

// checkOnPanel checks one icon composited on a panel of colour bg.
func checkOnPanel(t *testing.T, name string, img *image.NRGBA, size int, bg color.NRGBA) {
	t.Helper()
	// The badge: its ground is the darkest pixel well inside the disc
	// (the glyph is white), its glyph the lightest.
	badge := region(img, size, func(u, v float64) bool { return math.Hypot(u-badgeX, v-badgeY) <= 0.8*badgeR })
	tile := region(img, size, func(u, v float64) bool {
		return inRoundRect(u, v, tileMargin+0.06, 1-tileMargin-0.06, tileRadius) && math.Hypot(u-badgeX, v-badgeY) > badgeR+badgeGap+0.08
	})
	for _, r := range []struct {
		what string
		px   []color.NRGBA
	}{{"badge", badge}, {"tile", tile}} {
		if len(r.px) == 0 {
			t.Fatalf("%s: no %s pixels", name, r.what)
		}
		ground, glyph := darkest(r.px), lightest(r.px)
		if c := contrast(ground, bg); c < minContrast {
			t.Errorf("%s: the %s (%v) has contrast %.2f against the panel, want >= %.1f", name, r.what, ground, c, minContrast)
		}
		if c := contrast(glyph, ground); c < minContrast {
			t.Errorf("%s: the %s's glyph (%v) has contrast %.2f against its ground %v, want >= %.1f", name, r.what, glyph, c, ground, minContrast)
		}
		// A glyph, not a speck: a few pixels at least halfway from the
		// ground to white.
		half := (luminance(ground) + 1) / 2
		n := 0
		for _, c := range r.px {
			if luminance(c) >= half {
				n++
			}
		}
		if n < 3 {
			t.Errorf("%s: the %s's glyph covers %d pixels, want at least 3", name, r.what, n)
		}
	}
}

// checkBadgeCut: between the badge and the tile, along the line from the
// badge's centre to the tile's top left, there is a pixel that is mostly
// transparent: the panel shows between them.
func checkBadgeCut(t *testing.T, name string, img *image.NRGBA, size int) {
	t.Helper()
	minAlpha := 255
	for k := 0.0; k <= 1; k += 0.02 {
		d := badgeR + k*badgeGap
		u, v := badgeX-d/math.Sqrt2, badgeY-d/math.Sqrt2
		x, y := int(u*float64(size)), int(v*float64(size))
		minAlpha = min(minAlpha, int(img.NRGBAAt(x, y).A))
	}
	if minAlpha > 128 {
		t.Errorf("%s: the badge is not cut apart from the tile (least alpha between them %d, want <= 128)", name, minAlpha)
	}
}

// region lists the pixels whose centre satisfies in.
func region(img *image.NRGBA, size int, in func(u, v float64) bool) []color.NRGBA {
	var out []color.NRGBA
	for y := range size {
		for x := range size {
			if in((float64(x)+0.5)/float64(size), (float64(y)+0.5)/float64(size)) {
				out = append(out, img.NRGBAAt(x, y))
			}
		}
	}
	return out
}

// glyphMask marks the light pixels inside the badge.
func glyphMask(img *image.NRGBA, size int) []bool {
	var out []bool
	for y := range size {
		for x := range size {
			u, v := (float64(x)+0.5)/float64(size), (float64(y)+0.5)/float64(size)
			out = append(out, math.Hypot(u-badgeX, v-badgeY) <= badgeR && luminance(img.NRGBAAt(x, y)) > 0.55)
		}
	}
	return out
}

func hamming(a, b []bool) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func darkest(px []color.NRGBA) color.NRGBA {
	best := px[0]
	for _, c := range px {
		if luminance(c) < luminance(best) {
			best = c
		}
	}
	return best
}

func lightest(px []color.NRGBA) color.NRGBA {
	best := px[0]
	for _, c := range px {
		if luminance(c) > luminance(best) {
			best = c
		}
	}
	return best
}

// composite lays img over an opaque background.
func composite(img *image.NRGBA, bg color.NRGBA) *image.NRGBA {
	out := image.NewNRGBA(img.Bounds())
	for i := 0; i < len(img.Pix); i += 4 {
		a := float64(img.Pix[i+3]) / 255
		for k, b := range []uint8{bg.R, bg.G, bg.B} {
			out.Pix[i+k] = uint8(math.Round(float64(img.Pix[i+k])*a + float64(b)*(1-a)))
		}
		out.Pix[i+3] = 0xff
	}
	return out
}

// resample scales img down to size×size by area averaging (with
// premultiplied alpha), roughly what a panel's scaler does.
func resample(img *image.NRGBA, size int) *image.NRGBA {
	src := img.Bounds().Dx()
	scale := float64(src) / float64(size)
	out := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			var r, g, b, a, w float64
			x0, x1 := float64(x)*scale, float64(x+1)*scale
			y0, y1 := float64(y)*scale, float64(y+1)*scale
			for sy := int(y0); sy < int(math.Ceil(y1)); sy++ {
				for sx := int(x0); sx < int(math.Ceil(x1)); sx++ {
					// The part of the source pixel inside the target's.
					cw := (math.Min(x1, float64(sx+1)) - math.Max(x0, float64(sx))) * (math.Min(y1, float64(sy+1)) - math.Max(y0, float64(sy)))
					c := img.NRGBAAt(sx, sy)
					ca := float64(c.A) / 255
					r += float64(c.R) * ca * cw
					g += float64(c.G) * ca * cw
					b += float64(c.B) * ca * cw
					a += ca * cw
					w += cw
				}
			}
			if a == 0 {
				continue
			}
			out.SetNRGBA(x, y, color.NRGBA{
				R: uint8(math.Round(r / a)), G: uint8(math.Round(g / a)), B: uint8(math.Round(b / a)),
				A: uint8(math.Round(a / w * 255)),
			})
		}
	}
	return out
}

// luminance is WCAG 2's relative luminance of an opaque colour.
func luminance(c color.NRGBA) float64 {
	lin := func(v uint8) float64 {
		f := float64(v) / 255
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.R) + 0.7152*lin(c.G) + 0.0722*lin(c.B)
}

// contrast is WCAG 2's contrast ratio, from 1 to 21.
func contrast(a, b color.NRGBA) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func rgbDistance(a, b color.NRGBA) float64 {
	dr, dg, db := float64(a.R)-float64(b.R), float64(a.G)-float64(b.G), float64(a.B)-float64(b.B)
	return math.Sqrt(dr*dr + dg*dg + db*db)
}
