package testkit

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt is the integer in the environment variable name, or def when it is
// unset: the size knobs of the long property, crash and differential runs
// (for example PERMTUI_PROPERTY_CASES). A value that is not an integer
// fails the test rather than running the default silently.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}
