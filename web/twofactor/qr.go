package twofactor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/boombuler/barcode/qr"
)

// QR is a QR code drawn as one SVG path: the page puts it inline in an
// <svg>, so it needs neither a data: URI nor an image request, whatever the
// Content-Security-Policy's img-src says.
type QR struct {
	// Size is the width and height in modules, the quiet zone included:
	// the SVG's viewBox is "0 0 Size Size".
	Size int
	// Path is the path data of the dark modules, one unit a module.
	Path string
}

// quietZone is the light margin QR readers need around the code (4 modules
// by the standard).
const quietZone = 4

// NewQR encodes content (an otpauth:// URI) at error correction level M,
// the level authenticator apps' own QR codes use, through the QR encoder
// github.com/pquerna/otp itself uses (boombuler/barcode).
func NewQR(content string) (QR, error) {
	code, err := qr.Encode(content, qr.M, qr.Auto)
	if err != nil {
		return QR{}, fmt.Errorf("qr code: %w", err)
	}
	b := code.Bounds()
	var path strings.Builder
	for y := b.Min.Y; y < b.Max.Y; y++ {
		// Runs of dark modules on a row become one rectangle each.
		for x := b.Min.X; x < b.Max.X; {
			if !dark(code.At(x, y)) {
				x++
				continue
			}
			start := x
			for x < b.Max.X && dark(code.At(x, y)) {
				x++
			}
			path.WriteString("M" + strconv.Itoa(start-b.Min.X+quietZone) + " " + strconv.Itoa(y-b.Min.Y+quietZone) +
				"h" + strconv.Itoa(x-start) + "v1h-" + strconv.Itoa(x-start) + "z")
		}
	}
	return QR{Size: b.Dx() + 2*quietZone, Path: path.String()}, nil
}

// dark reports whether a module is set: the encoder draws dark modules in
// black and light ones in white.
func dark(c interface{ RGBA() (r, g, b, a uint32) }) bool {
	r, _, _, _ := c.RGBA()
	return r < 0x8000
}
