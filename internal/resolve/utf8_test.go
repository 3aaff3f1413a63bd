package resolve

import (
	"strings"
	"testing"
)

// The WHATWG decoder's replacement of maximal subparts, as Node's
// readFileSync(file, "utf-8") applies it (Unicode §3.9, table 3-8 and the
// examples after it).
func TestDecodeUTF8LikeNode(t *testing.T) {
	const R = "\uFFFD"
	for _, tc := range []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"é😀", "é😀"},
		{"a\xF1\x80\x80\xE1\x80\xC2b\x80c\x80\xBFd", "a" + R + R + R + "b" + R + "c" + R + R + "d"},
		{"a\xFF\xFEb", "a" + R + R + "b"},
		{"a\xE2\x82b", "a" + R + "b"},
		{"\xE2\x82", R},
		{"\xED\xA0\x80", R + R + R},         // a surrogate is no maximal subpart
		{"\xE0\x80\x80", R + R + R},         // overlong
		{"\xC0\xAF", R + R},                 // overlong lead byte
		{"\xF4\x90\x80\x80", R + R + R + R}, // above U+10FFFF
		{"\xF0\x9F\x98", R},                 // a truncated emoji
		{"\xF0\x9F\x98x\x80", R + "x" + R},
	} {
		if got := decodeUTF8(tc.in); got != tc.want {
			t.Errorf("decodeUTF8(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if s := strings.Repeat("ok", 10); decodeUTF8(s) != s {
		t.Error("valid text must come back unchanged")
	}
}
