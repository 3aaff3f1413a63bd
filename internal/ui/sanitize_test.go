package ui

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/permtui/permtui/internal/termsafe"
)

func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"git status --short", "git status --short"},
		{"/w/p/src/app.ts", "/w/p/src/app.ts"},
		{"naïve 日本語 ✓", "naïve 日本語 ✓"},
		{"a\nb\tc\rd", "a␊b⇥c␍d"},
		{"\x00\x07\x08\x1f\x7f", "␀␇␈␟␡"},
		// Sequences are neutralized, and what they carried stays visible.
		{"\x1b[31mred\x1b[0m", "␛[31mred␛[0m"},
		{"ls \x1b]52;c;cm0gLXJmIH4=\x07; rm -rf ~", "ls ␛]52;c;cm0gLXJmIH4=␇; rm -rf ~"},
		{"x\x1bP+q\x1b\\y", "x␛P+q␛\\y"},
		{"\x1b_apc\x1b\\\x1bXsos\x1b\\\x1b^pm\x1b\\", "␛_apc␛\\␛Xsos␛\\␛^pm␛\\"},
		// 8-bit C1: as runes and as raw (invalid UTF-8) bytes, each by
		// what it is (decision 0253).
		{"a\u009b31mb\u009d0;t\u009c", "a⟨U+009B⟩31mb⟨U+009D⟩0;t⟨U+009C⟩"},
		{"a\x9b31mb", "a⟨0x9B⟩31mb"},
		// Bidi embeddings, overrides, isolates and marks, and other
		// invisible format characters.
		{"\u202eexe.txt\u202c", "⟨U+202E⟩exe.txt⟨U+202C⟩"},
		{"a\u2066b\u2069c\u200ed\u200fe\u061cf", "a⟨U+2066⟩b⟨U+2069⟩c⟨U+200E⟩d⟨U+200F⟩e⟨U+061C⟩f"},
		{"zero\u200bwidth\ufeff", "zero⟨U+200B⟩width⟨U+FEFF⟩"},
		{"tag\U000E0041", "tag⟨U+E0041⟩"},
		{"line\u2028sep", "line⟨U+2028⟩sep"},
		// A value's own stand-in characters are spelled, so they do not
		// read as what they stand for.
		{"a␛[31m⇥⟨U+200B⟩", "a⟨U+241B⟩[31m⟨U+21E5⟩⟨U+27E8⟩U+200B⟩"},
		// A lone surrogate (kept as WTF-8, decision 0175) by its code
		// point: two different ones never look alike, nor like U+FFFD
		// (adv2 suspicion S5: "\ud800" and "\udfff" both showed "���").
		{"echo \xed\xa0\x80", "echo ⟨U+D800⟩"},
		{"echo \xed\xbf\xbf", "echo ⟨U+DFFF⟩"},
		{"echo \ufffd\ufffd\ufffd", "echo \ufffd\ufffd\ufffd"},
		{"\xed\xa0", "⟨0xED⟩⟨0xA0⟩"}, // cut short: two invalid bytes
	}
	for _, c := range cases {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSanitizeLines(t *testing.T) {
	got := SanitizeLines("Agent wants:\n  rm \x1b[8m-rf\n")
	want := []string{"Agent wants:", "  rm ␛[8m-rf", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("SanitizeLines = %q, want %q", got, want)
	}
}

// FuzzSanitize checks the promises: nothing that can drive a terminal or
// reorder text survives, ordinary printable text without a stand-in's
// characters is left alone, and shown text passes Neutralize unchanged (the
// console caps text it composed of shown values with it). That no two
// values show alike is termsafe's TestSanitizeReadsBack.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b[2J\x1b]0;t\x07", "\x9b\x9d\x90\x98\x9e\x9f\x9c", "\u202e\u2066\u200f\u061c",
		"a\nb\r\tc", "\xff\xfe", "日本\u0085語", "\x1bP1$r\x1b\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q: %q", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) ||
				r == '\u2028' || r == '\u2029' {
				t.Fatalf("Sanitize(%q) kept %U: %q", in, r, out)
			}
		}
		if printable(in) && !strings.ContainsAny(in, "⟨⇥") && !strings.ContainsFunc(in, controlPicture) && out != in {
			t.Fatalf("Sanitize changed printable text %q to %q", in, out)
		}
		if termsafe.Neutralize(out) != out {
			t.Fatalf("Neutralize changed what Sanitize showed of %q: %q", in, out)
		}
	})
}

func controlPicture(r rune) bool { return r >= 0x2400 && r <= 0x243f }

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) ||
			r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}
