package ui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/permtui/permtui/internal/inbox"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii) // goldens must not depend on the terminal
	os.Exit(m.Run())
}

// screen runs the console in a real Bubble Tea program at a fixed size,
// applies steps, waits until marker is on the terminal, then quits and
// returns the final model and the raw bytes the program wrote.
//
// The golden is the final View, not the raw stream: the stream is a series
// of renderer diffs whose split depends on frame timing.
func screen(t *testing.T, width, height int, marker string, steps func(tm *teatest.TestModel), tweak ...func(*Options)) (*Model, []byte) {
	t.Helper()
	opts := Options{
		Backend:   &fakeBackend{},
		Now:       func() time.Time { return testNow },
		Refresh:   -1,
		Settle:    -1, // the clock stands still; TestGoldenSettling turns it on
		Attention: io.Discard,
		ReadFile:  noFiles,
	}
	for _, f := range tweak {
		f(&opts)
	}
	m := New(opts)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(width, height))
	steps(tm)
	var raw bytes.Buffer
	teatest.WaitFor(t, io.TeeReader(tm.Output(), &raw), func(b []byte) bool {
		return bytes.Contains(b, []byte(marker))
	}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*Model)
	rest, err := io.ReadAll(tm.FinalOutput(t))
	if err != nil {
		t.Fatal(err)
	}
	raw.Write(rest)
	// The highlight bar's reverse video is the one SGR under NO_COLOR;
	// TestHighlightIsAFullWidthReverseBar checks it, the golden the text.
	golden.RequireEqual(t, []byte(ansi.Strip(final.View())))
	return final, raw.Bytes()
}

// shows waits until the screen has shown text.
func shows(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(5*time.Millisecond))
}

func queued(tm *teatest.TestModel, asks ...serve.Ask) {
	for _, a := range asks {
		tm.Send(EventMsg{Event: serve.AskQueued{Ask: a}})
	}
}

func press(tm *teatest.TestModel, names ...string) {
	for _, n := range names {
		tm.Send(keyMsg(n))
	}
}

func serving(tm *teatest.TestModel) {
	tm.Send(EventMsg{Event: serve.Serving{Serving: inbox.Serving{Session: rootSession}}})
	tm.Send(EventMsg{Event: serve.PolicyStatus{}})
}

func TestGoldenEmptyQueue(t *testing.T) {
	screen(t, 80, 24, "No asks waiting", func(tm *teatest.TestModel) { serving(tm) })
}

func TestGoldenThreePending(t *testing.T) {
	screen(t, 80, 24, "ask 2 of 3", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, legacyBash(), pathWrite(), bashChain())
		press(tm, "j")
	})
}

func TestGoldenThreePendingNarrow(t *testing.T) {
	screen(t, 60, 24, "ask 3 of 3", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, legacyBash(), pathWrite(), bashChain())
		press(tm, "j", "j")
	})
}

func TestGoldenScopeChoice(t *testing.T) {
	screen(t, 80, 24, "whole session, both", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, externalRead())
		press(tm, "s", "j", "j")
	})
}

// A 20.7.3 child: the dialog says that permtui's grant will not answer this
// child's own later asks, which carry no facts.
func TestGoldenScopeChoiceLegacyChild(t *testing.T) {
	screen(t, 80, 24, "still come here", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, legacyBash())
		press(tm, "s", "j")
	})
}

func TestGoldenDenyReason(t *testing.T) {
	screen(t, 80, 24, "no force pushes", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, bashChain())
		press(tm, "r")
		tm.Type("no force pushes")
	})
}

func TestGoldenGrantsPane(t *testing.T) {
	screen(t, 80, 24, "git status", func(tm *teatest.TestModel) {
		serving(tm)
		tm.Send(EventMsg{Event: serve.GrantsChanged{Grants: map[string][]wire.Grant{
			rootSession:  {{Surface: "path_write", Pattern: "/w/p/src/*"}, {Surface: "external_directory", Pattern: "/w/other/*"}},
			"other-root": {{Surface: "bash", Pattern: "git status *"}},
		}}})
		press(tm, "p", "j")
	})
}

func TestGoldenDecisionLog(t *testing.T) {
	screen(t, 80, 24, "decision log", func(tm *teatest.TestModel) {
		serving(tm)
		rule := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("git *"), Origin: sp("global")}
		grant := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "path_write", Pattern: sp("/w/p/src/*"), Origin: sp("session")}
		user := &wire.DecisionSource{Kind: wire.DecidedByUser, Via: "dialog"}
		for _, ev := range []serve.Event{
			serve.Decided{Ask: legacyBash(), Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: user}},
			serve.Decided{Ask: bashChain(), Response: wire.Response{State: wire.StateDeniedWithReason, DenialReason: "force pushes need review", DecidedBy: rule}, Auto: true},
			serve.Decided{Ask: pathWrite(), Response: wire.Response{Approved: true, State: wire.StateApproved, DecidedBy: grant}, Auto: true},
			serve.Decided{Ask: externalRead(), Response: wire.Response{Approved: true, State: wire.StateApprovedForSession, DecidedBy: user}},
			serve.Invalid{Invalid: inbox.Invalid{Session: rootSession, Path: "requests/bad.json", Reason: "createdAt is not a number"}},
		} {
			tm.Send(EventMsg{Event: ev})
		}
		press(tm, "l")
	})
}

func TestGoldenExpiredAsk(t *testing.T) {
	screen(t, 80, 24, "expired: deployer", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), bashChain())
		press(tm, "j")
		tm.Send(EventMsg{Event: withdrawn(bashChain().ID, true)})
	})
}

// A hub console at 80 columns: hosts whole in the rows (finding F8), the
// whole-session grants the relays reported counted in the header (F14).
func TestGoldenHubRows(t *testing.T) {
	screen(t, 80, 24, "ask 1 of 4", func(tm *teatest.TestModel) {
		tm.Send(EventMsg{Event: serve.GrantsChanged{Grants: map[string][]wire.Grant{
			rootSession: {{Surface: "bash", Pattern: "npm test *"}},
		}}})
		queued(tm, hubAsks()...)
	}, func(o *Options) { o.OverHub = true })
}

// Quitting a hub console while the hub has not confirmed a decision: the
// prompt names it and the key says it is lost (decision 0249).
func TestGoldenHubQuitWithAnUnsentDecision(t *testing.T) {
	screen(t, 80, 24, "quit and lose it", func(tm *teatest.TestModel) {
		queued(tm, hubAsks()...)
		press(tm, "y")
		shows(t, tm, "keeps sending")
		press(tm, "q")
	}, func(o *Options) {
		o.OverHub = true
		o.Backend = &fakeBackend{decideErr: fmt.Errorf("%w (nats: timeout)", serve.ErrDelivering)}
	})
}

func TestGoldenHostileStrings(t *testing.T) {
	_, raw := screen(t, 80, 24, "ask 1 of 1", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, hostile())
		press(tm, "v")
		press(tm, "esc")
	})
	// The renderer writes its own CSI sequences and the title OSC; none of
	// the request's may get through.
	for _, bad := range []string{"\x1b]52", "\x1bP", "\x1b_", "\x1b[8m", "\x07;"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("terminal output contains %q", bad)
		}
	}
	if !utf8.Valid(raw) {
		t.Error("terminal output is not valid UTF-8 (a raw 8-bit C1 byte got through)")
	}
	for _, r := range string(raw) {
		if (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) {
			t.Errorf("terminal output contains %U", r)
		}
	}
}

// A program quit by key with nothing pending must end on its own.
func TestQuitEndsProgram(t *testing.T) {
	m := New(Options{Backend: &fakeBackend{}, Now: func() time.Time { return testNow }, Refresh: -1, Attention: io.Discard})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

func TestGoldenSettling(t *testing.T) {
	screen(t, 80, 24, "ignored for 400ms", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), bashChain())
		press(tm, "y") // the clock stands still: the arrival has not settled
	}, func(o *Options) { o.Settle = 0 })
}

func TestGoldenApproveIdenticalShowsWhich(t *testing.T) {
	b := pathWrite()
	b.ID++
	screen(t, 80, 24, "press a again", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), bashChain(), b)
		shows(t, tm, "+ export const x = 1;") // approving waits for the change on screen
		press(tm, "a")
	})
}

// The rule dialog over a bash ask: the pattern edited from the child's
// suggestion, the coverage with a person's denial, and the config's diff.
func TestGoldenRuleDialog(t *testing.T) {
	rules := &fakeRules{preview: RulePreview{
		File:     "/home/u/.pi/agent/extensions/pi-permission-system/config.json",
		Coverage: "would have decided 37 of the last 412 recorded asks; 2 of them a person denied",
		Denied:   []string{`"deployer" "bash" ["git push --force origin main"]`, `"builder" "bash" ["git push origin wip"]`},
		Waiting:  []int{0},
		Warnings: []string{"it would allow 2 recorded asks a person denied"},
		Broad:    true,
		Confirm:  2,
		Diff: "--- config.json\n+++ config.json\n@@ -4,7 +4,8 @@\n     \"bash\": {\n       \"*\": \"ask\",\n" +
			"-      \"git status\": \"allow\" // read-only\n+      \"git status\": \"allow\", // read-only\n+      \"git push *\": \"allow\"\n     }\n   }\n }\n",
	}}
	screen(t, 80, 24, "read-only", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, bashChain())
		press(tm, "R", "tab")
	}, withRules(rules))
}

func TestGoldenQuitChoice(t *testing.T) {
	screen(t, 80, 24, "leave them", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, pathWrite(), bashChain())
		press(tm, "q")
	}, func(o *Options) { o.CanLeave = true })
}

func TestGoldenActivity(t *testing.T) {
	screen(t, 100, 30, "auto by agent", func(tm *teatest.TestModel) {
		serving(tm)
		rule := &wire.DecisionSource{Kind: wire.DecidedByRule, Surface: "bash", Pattern: sp("git push *"), Origin: sp("global")}
		tm.Send(EventMsg{Event: serve.Decided{Ask: bashChain(), Response: wire.Response{State: wire.StateDenied, DecidedBy: rule}, Auto: true}})
		queued(tm, pathWrite())
	})
}

func TestGoldenScopeEdit(t *testing.T) {
	screen(t, 80, 24, "pattern: /w/other/README.md", func(tm *teatest.TestModel) {
		serving(tm)
		queued(tm, externalRead())
		press(tm, "s", "j", "j", "e", "ctrl+u")
		tm.Type("/w/other/README.md")
	})
}
