package resolve

// MatchPattern compiles and matches in one step, for the tests.
func MatchPattern(pattern, value, home string) bool {
	p := CompilePattern(pattern, home)
	return p.Match(value)
}
