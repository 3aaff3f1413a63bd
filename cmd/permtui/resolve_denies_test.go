package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/permtui/permtui/internal/grants"
	"github.com/permtui/permtui/internal/pichild"
	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// resolve judges as serve does, the session's denies included (finding F2:
// it took the session's grants but never its denies, so "git status",
// which a person denied for the session as "git *", read allow and exited
// 0 where serve denies). Each form that names the session: --request (by
// its targetSessionId), --surface with --session, --batch with --session.
// stdout stays pi's verdict (pi knows no session denies); the exit status
// and stderr are serve's.
func TestResolveJudgesTheSessionsDenies(t *testing.T) {
	flags := resolveFixture(t) // bash "git *": allow
	state := flags[len(flags)-1]
	store, err := grants.Open(filepath.Join(state, "grants"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddDeny(rootID, grants.Deny{Grant: wire.Grant{Surface: "bash", Pattern: "git *"}, Reason: "no git"}); err != nil {
		t.Fatal(err)
	}
	data, err := wire.MarshalRequest(pichild.NewestBash(rootID, "builder", "child-1", "/w", "git status"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "request.json")
	testkit.WriteFile(t, file, data)
	resolveArgs := append([]string{"resolve"}, flags...)
	for name, tc := range map[string]struct {
		stdin string
		args  []string
	}{
		"request": {"", []string{"--request", file}},
		"facts":   {"", []string{"--session", rootID, "--surface", "bash", "--value", "git status"}},
		"batch":   {`{"agent":"builder","surface":"bash","values":["git status"]}` + "\n", []string{"--session", rootID, "--batch"}},
	} {
		code, out, errOut := runCmd(t, tc.stdin, append(append(resolveArgs, "--exit-code"), tc.args...)...)
		if code != exitDeny || !strings.Contains(errOut, "serve would deny instead") || !strings.Contains(errOut, "no git") {
			t.Errorf("%s: exit %d, stderr %q; want %d, serve's deny and its reason", name, code, errOut, exitDeny)
		}
		if !strings.Contains(out, `"state":"allow"`) {
			t.Errorf("%s: stdout %q, want pi's verdict (allow)", name, out)
		}
	}
	// Another session's denies do not apply.
	other := "0198c3a4-5b6d-7e8f-9a0b-000000000000"
	if code, _, errOut := runCmd(t, "", append(append(resolveArgs, "--exit-code", "--session", other), "--surface", "bash", "--value", "git status")...); code != exitAllow {
		t.Errorf("another session: exit %d, stderr %q", code, errOut)
	}
}
