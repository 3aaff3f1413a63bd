package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permtui/permtui/internal/testkit"
	"github.com/permtui/permtui/internal/wire"
)

// answer is typed at the terminal once stdout shows prompt; before runs
// first, as another writer would while the prompt is open.
type answer struct {
	prompt, text string
	before       func()
}

// runAtTerminal runs the command line in process with a pseudo-terminal as
// its stdin, as a person at a terminal would, typing each answer once its
// prompt is shown.
func runAtTerminal(t *testing.T, args []string, answers ...answer) (int, string, string) {
	t.Helper()
	master, slave := openPTY(t, 30, 100)
	defer master.Close()
	defer slave.Close()
	go func() { _, _ = io.Copy(io.Discard, master) }() // the terminal's echo
	var out, errOut testkit.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, slave, &out, &errOut) }()
	shown := 0
	for _, a := range answers {
		deadline := time.Now().Add(testkit.WaitLimit)
		for {
			if i := strings.Index(out.String()[shown:], a.prompt); i >= 0 {
				shown += i + len(a.prompt)
				break
			}
			select {
			case code := <-done:
				return code, out.String(), errOut.String()
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("never prompted %q:\n%s\n%s", a.prompt, out.String(), errOut.String())
			}
		}
		if a.before != nil {
			a.before()
		}
		if _, err := master.Write([]byte(a.text + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case code := <-done:
		return code, out.String(), errOut.String()
	case <-time.After(testkit.WaitLimit):
		t.Fatalf("still running:\n%s\n%s", out.String(), errOut.String())
	}
	return 0, "", ""
}

func TestRuleAddConfirmationAtATerminal(t *testing.T) {
	e := newRuleEnv(t, commented)
	add := e.args("rule", "add", "--surface", "bash", "--pattern", "ls", "--action", "allow")
	if code, _, _ := runAtTerminal(t, add, answer{prompt: "[y/N]", text: "n"}); code != 1 || readFile(t, e.global()) != commented {
		t.Errorf("declined: exit %d, file changed %v", code, readFile(t, e.global()) != commented)
	}
	if code, out, errOut := runAtTerminal(t, add, answer{prompt: "[y/N]", text: "y"}); code != 0 || !strings.Contains(readFile(t, e.global()), `"ls": "allow"`) {
		t.Errorf("confirmed: %d %s %s", code, out, errOut)
	}
}

// The broad rule's second question wants the count its warnings name (3 +
// 2); another number writes nothing.
func TestRuleAddBroadAsksForTheCountAtATerminal(t *testing.T) {
	e := newRuleEnv(t, commented)
	e.record(t, asked("a", "rm -rf /tmp/x", false, wire.UserDecision()), asked("a", "rm x", false, wire.UserDecision()), asked("a", "ls", true, wire.UserDecision()))
	add := e.args("rule", "add", "--surface", "bash", "--pattern", "*", "--action", "allow")
	code, out, _ := runAtTerminal(t, add, answer{prompt: "[y/N]", text: "y"}, answer{prompt: "type 5", text: "2"})
	if code != 1 || readFile(t, e.global()) != commented {
		t.Errorf("wrong typed count: %d %s", code, out)
	}
}

// TestRuleAddReplansAfterTheConfirmation: an agent file that appears while
// the y/N prompt is open makes the rule pass its deny; what was confirmed
// named no loosening, so nothing is written.
func TestRuleAddReplansAfterTheConfirmation(t *testing.T) {
	e := newRuleEnv(t, commented)
	locked := func() {
		testkit.WriteFile(t, filepath.Join(e.agentDir, "agents", "locked.md"), []byte("---\nname: locked\npermission:\n  bash:\n    \"*\": deny\n---\n"))
	}
	code, out, errOut := runAtTerminal(t, e.args("rule", "add", "--surface", "bash", "--pattern", "npm *", "--action", "allow"),
		answer{prompt: "[y/N]", text: "y", before: locked})
	if code != 1 || !strings.Contains(errOut, "the policy changed while you were deciding") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "written:") || readFile(t, e.global()) != commented {
		t.Errorf("written:\n%s", out)
	}
}
