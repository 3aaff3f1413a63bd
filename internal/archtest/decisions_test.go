package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// measuredFigure matches what a run measures, as opposed to a bound or a
// setting (a 4 MiB cap, a 1 s heartbeat): a figure said to be measured, a
// time below a millisecond, a range of times or sizes, a size of memory in
// use, a share of a core, a benchmark's per-op column or a percentile.
var measuredFigure = regexp.MustCompile(strings.Join([]string{
	`(?i)\bmeasured\b[^.]*?\d`,
	`(?i)\bmeasured\b\s*\([^)]*\)\)?:\s*\d`,
	`\d\s?(µs|ns)\b`,
	`\d[\d.,]*\s?[–-]\s?[\d.,]+\s?(µs|ms|s|MiB|KiB|GiB|MB|GB|KB)\b`,
	`(?i)\d[\d.,]*\s?(MiB|KiB|GiB|MB|GB|KB)\s+(of\s+)?(RSS|heap|live|allocated|peak|kept|held)\b`,
	`(?i)\b(RSS|heap|allocated)\b[^.]*?\d[\d.,]*\s?(MiB|GiB|MB|GB)\b`,
	`\d\s?% of a core`,
	`ns/op|B/op|allocs/op`,
	`\bp(50|90|95|99)\s+[\d.,]+\s?(µs|ms|s)\b`,
}, "|"))

// TestDecisionRecordsCarryNoMeasuredFigures: measured figures live in
// docs/performance.md and docs/reliability.md, which the records link to
// (issue 22), so a figure measured again is corrected in one place.
func TestDecisionRecordsCarryNoMeasuredFigures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "decisions", "*.md"))
	if err != nil || len(files) < 100 {
		t.Fatalf("found %d decision records: %v", len(files), err)
	}
	anchors := map[string]map[string]bool{}
	for _, doc := range []string{"performance.md", "reliability.md"} {
		anchors[doc] = headingAnchors(t, filepath.Join(root, "docs", doc))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range figureLink.FindAllStringSubmatch(string(data), -1) {
			if !anchors[m[1]][m[2]] {
				t.Errorf("%s: link to %s#%s: no such section", filepath.Base(file), m[1], m[2])
			}
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := measuredFigure.FindString(line); m != "" {
				t.Errorf("%s:%d: a measured figure (%q): move it to docs/performance.md or docs/reliability.md and link there", filepath.Base(file), i+1, m)
			}
		}
	}
}

// figureLink is a link from a decision record to a section of the figures.
var figureLink = regexp.MustCompile(`\(\.\./(performance\.md|reliability\.md)#([^)]+)\)`)

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// file: lower case, spaces to hyphens, punctuation but hyphens dropped.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
