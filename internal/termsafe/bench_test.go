package termsafe

import (
	"strings"
	"testing"
)

// BenchmarkSanitize: what showing a request's value costs, for a plain
// command (the fast path), one with non-ASCII text and a colour sequence,
// and a hostile one full of characters shown by stand-ins.
func BenchmarkSanitize(b *testing.B) {
	for _, c := range []struct{ name, in string }{
		{"plain", strings.Repeat("git status --short ", 10)},
		{"text", strings.Repeat("naïve 日本語 \x1b[31mred\x1b[0m ", 10)},
		{"hostile", strings.Repeat("rm x\u200b\u202e\xff\xed\xa0\x80\u0085 ", 10)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			for b.Loop() {
				_ = Sanitize(c.in)
			}
		})
	}
}
