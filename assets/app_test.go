package assets

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"testing"
)

func TestAppIcons(t *testing.T) {
	for _, size := range AppIconSizes {
		img, err := png.Decode(bytes.NewReader(AppPNG(size)))
		if err != nil {
			t.Fatalf("%d: %v", size, err)
		}
		if b := img.Bounds(); b.Dx() != size || b.Dy() != size {
			t.Errorf("%d: %v", size, b)
		}
	}
	if !bytes.Equal(AppPNG(pngSize), PNG(Mark)) {
		t.Errorf("the %d px application icon is not the mark", pngSize)
	}
	d := xml.NewDecoder(bytes.NewReader(AppSVG()))
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v\n%s", err, AppSVG())
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Space + " " + se.Name.Local
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("SVG root %q", root)
	}
}
