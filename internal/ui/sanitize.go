package ui

import (
	"strings"

	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// Sanitize makes an untrusted string safe to print on one terminal line,
// with visible stand-ins (termsafe.Sanitize, decision 0061).
func Sanitize(s string) string { return termsafe.Sanitize(s) }

// blanked is Sanitize with the blanks that would read as something else
// shown (termsafe.Blanks): for a value, a grant's pattern or an agent name,
// where the bytes judged or recorded are what count.
func blanked(s string) string { return termsafe.Blanks(Sanitize(s)) }

// grantText is a grant on one line: surface and pattern.
func grantText(g wire.Grant) string { return Sanitize(g.Surface) + " " + blanked(g.Pattern) }

// SanitizeLines splits an untrusted multi-line text at its newlines and
// sanitizes each line, for contexts that show text over several rows.
func SanitizeLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Sanitize(l)
	}
	return lines
}
