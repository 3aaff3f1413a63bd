package ui

import (
	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/serve"
)

// Fact is one line of an ask's disclosure for a front end outside the
// terminal (the approve page): Label may be empty, Text is sanitized as
// the console shows it, Kind names how it reads ("plain", "warning",
// "heading", "muted", "added", "removed", "context", "hunk", …).
type Fact struct{ Label, Text, Kind string }

var kindNames = map[fieldKind]string{
	kindPlain: "plain", kindBoundary: "boundary", kindWarning: "warning", kindAnnotation: "annotation",
	kindMuted: "muted", kindHeading: "heading", kindAdded: "added", kindRemoved: "removed",
	kindContext: "context", kindHunk: "hunk",
}

// Disclosure is the console's detail of a waiting ask (the same fields, in
// the same order), with diff the change of a write or edit ask if read,
// and without the session scopes, which only the console offers.
func Disclosure(a serve.Ask, diff *preview.Diff) []Fact {
	fields := detailFields(&entry{ask: a, diff: diff})
	fields = fields[:len(fields)-len(sessionFields(a))]
	facts := make([]Fact, len(fields))
	for i, f := range fields {
		facts[i] = Fact{Label: f.label, Text: f.text, Kind: kindNames[f.kind]}
	}
	return facts
}
