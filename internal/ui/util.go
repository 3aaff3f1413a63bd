package ui

import "strconv"

func itoa(n int) string { return strconv.Itoa(n) }

// plural writes "1 ask" / "2 asks"; an explicit plural form covers the rest
// ("1 ask is" / "2 asks are").
func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return itoa(n) + " " + many[0]
	}
	return itoa(n) + " " + one + "s"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
