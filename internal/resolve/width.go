package resolve

import (
	"strings"

	"github.com/permtui/permtui/internal/wire"
)

// Family returns the bare family of a directional path surface
// ("path_read" → "path"), or false for any other surface.
func Family(surface string) (string, bool) {
	for _, fam := range [...]string{"path", "external_directory"} {
		if surface == fam+"_read" || surface == fam+"_write" {
			return fam, true
		}
	}
	return "", false
}

// Widen returns the grants at the "family" width (both directions): each
// directional surface replaced by its bare family, patterns unchanged. It
// reports false when widening is not offered, which is unless every grant
// proves the same single direction (ruleset-semantics §8.3).
func Widen(grants []wire.Grant) ([]wire.Grant, bool) {
	if len(grants) == 0 {
		return nil, false
	}
	direction := ""
	widened := make([]wire.Grant, len(grants))
	for i, g := range grants {
		fam, ok := Family(g.Surface)
		if !ok {
			return nil, false
		}
		dir := strings.TrimPrefix(g.Surface, fam)
		if direction != "" && dir != direction {
			return nil, false
		}
		direction = dir
		widened[i] = wire.Grant{Surface: fam, Pattern: g.Pattern}
	}
	return widened, true
}
