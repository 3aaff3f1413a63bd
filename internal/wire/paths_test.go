package wire

import (
	"path/filepath"
	"regexp"
	"testing"
)

func TestEncodeSegment(t *testing.T) {
	cases := map[string]string{
		"a b/c:d":                              "a%20b%2Fc%3Ad",
		"0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b": "0198c3a4-5b6d-7e8f-9a0b-1c2d3e4f5a6b",
		"ABCXYZabcxyz0189-_.!~*'()":            "ABCXYZabcxyz0189-_.!~*'()",
		"..":                                   "..",
		"":                                     "",
		"é":                                    "%C3%A9",
		"日本":                                   "%E6%97%A5%E6%9C%AC",
		"😀":                                    "%F0%9F%98%80",
		"%+&=?#[]@$,;\"\\<>^`{|}":              "%25%2B%26%3D%3F%23%5B%5D%40%24%2C%3B%22%5C%3C%3E%5E%60%7B%7C%7D",
		"\x00\n\x7f":                           "%00%0A%7F",
		"a\xffb":                               "a%FFb", // invalid UTF-8: the byte on its own
		"\xed\xa0\x80":                         "%ED%A0%80",
	}
	for in, want := range cases {
		if got := EncodeSegment(in); got != want {
			t.Errorf("EncodeSegment(%q) = %q, want %q", in, got, want)
		}
	}
	// Every byte that is not unreserved (encodeURIComponent's set) is encoded.
	unreservedJS := regexp.MustCompile(`^[A-Za-z0-9\-_.!~*'()]$`)
	for b := 0; b < 0x80; b++ {
		s := string(rune(b))
		got := EncodeSegment(s)
		if unreservedJS.MatchString(s) != (got == s) {
			t.Errorf("byte %#x encoded as %q", b, got)
		}
	}
}

func TestAgentDirAndLayout(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "PI_CODING_AGENT_DIR" {
				return v
			}
			return ""
		}
	}
	for in, want := range map[string]string{"": "/home/u/.pi/agent", "~": "/home/u", "~/x/y": "/home/u/x/y", "/opt/pi": "/opt/pi", "~x": "~x"} {
		if got := AgentDir(env(in), "/home/u"); got != want {
			t.Errorf("AgentDir(%q) = %q, want %q", in, got, want)
		}
	}
	l := NewLayout("/home/u/.pi/agent")
	root := "/home/u/.pi/agent/sessions/permission-forwarding"
	for _, c := range [][2]string{
		{l.Root, root},
		{l.SessionsDir(), root + "/sessions"},
		{l.SessionDir("a b"), root + "/sessions/a%20b"},
		{l.RequestsDir("s"), root + "/sessions/s/requests"},
		{l.ResponsesDir("s"), root + "/sessions/s/responses"},
		{l.RequestPath("s/x", "1-a-2"), root + "/sessions/s%2Fx/requests/1-a-2.json"},
		{l.ResponsePath("s", "1-a-2"), root + "/sessions/s/responses/1-a-2.json"},
		{l.ServingDir(), root + "/serving"},
		{l.HeartbeatPath("a:b"), root + "/serving/a%3Ab.json"},
	} {
		if got, want := filepath.ToSlash(c[0]), c[1]; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
