// Package ui is the approval console: a Bubble Tea model that shows what the
// serving loop reports and turns a person's keys into serve.Decision values.
// Update does no IO; every call to the Backend but the scope dialog's
// EditReach (a judgment in memory, made as an edit is typed) runs in a
// tea.Cmd and comes back as a message. The root Model owns the queue; each of the seven
// overlays is a component that returns an action to it (see overlay.go and
// README.md).
package ui

import (
	"cmp"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/budget"
	"github.com/permtui/permtui/internal/preview"
	"github.com/permtui/permtui/internal/resolve"
	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/termsafe"
	"github.com/permtui/permtui/internal/wire"
)

// Backend is what the console asks of the serving loop (*serve.Server).
type Backend interface {
	Decide(serve.Decision) error
	RevokeGrant(session string, g wire.Grant) error
	RevokeDeny(session string, d serve.SessionDeny) error
}

// Options configures the console.
type Options struct {
	Backend Backend
	// Rules previews and writes the R dialog's rules; nil leaves R off.
	Rules RuleBackend
	// Bell rings the terminal bell on each new ask.
	Bell bool
	// Notify sends an OSC 9 and an OSC 777 desktop notification on each new
	// ask. It carries only the pending count, never request text.
	Notify bool
	// ConfirmDouble makes every decision need two presses of the same key.
	ConfirmDouble bool
	// Home is what "~" in a grant's pattern means where serve judges it, for
	// the asks a dialog says a choice covers; empty over a hub, whose asks
	// come from other hosts.
	Home string
	// OverHub: the asks are the hub's (docs/hub.md); quitting leaves them
	// there for another console instead of denying them.
	OverHub bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Refresh is how often ages and countdowns redraw; 0 means every second
	// and a negative value turns the ticker off (tests).
	Refresh time.Duration
	// CanLeave offers, when quitting with asks pending, to leave them for
	// the next server (LeaveWaiting) besides denying them.
	CanLeave bool
	// Settle is how long decision keys do nothing after the highlighted ask
	// changed or moved without the person moving it (a decision, an
	// arrival, an expiry, a grant); 0 means DefaultSettle, negative turns it
	// off. A decision key pressed meanwhile restarts it, so a held key never
	// decides two asks.
	Settle time.Duration
	// ReadFile reads the current file for a diff preview; nil means
	// preview.ReadCurrent (regular files only, size-capped).
	ReadFile func(path string) ([]byte, error)
	// FileStamp identifies the version of a diff's file (size and
	// modification time); a change makes the diff stale and it is read
	// again. Called in commands only. nil means os.Stat's.
	FileStamp func(path string) string
	// Attention receives the bell, notification and window-title sequences;
	// nil means os.Stdout, the terminal the console draws on. Bubble Tea v1
	// has no command that writes raw bytes through its renderer; writes to
	// one *os.File are serialized, the renderer writes each frame in one
	// Write, and none of these sequences move the cursor.
	Attention io.Writer
}

// DefaultSettle is the settle time after the highlight changed under the
// person: longer than a key's auto-repeat delay, shorter than a glance.
const DefaultSettle = 400 * time.Millisecond

// DefaultTimeout is pi's forwarding timeout (wire-protocol §6): the countdown's.
const DefaultTimeout = 10 * time.Minute

// EventMsg carries one serving-loop event into the program:
// program.Send(ui.EventMsg{Event: ev}).
type EventMsg struct{ Event serve.Event }

// decidedMsg is the Backend's answer to one Decide call.
type decidedMsg struct {
	Decision serve.Decision
	Err      error
}

// revokedMsg is the Backend's answer to one RevokeGrant or RevokeDeny call.
type revokedMsg struct {
	rule sessionRule
	err  error
}

type tickMsg time.Time

type askState int

const (
	statePending askState = iota
	stateSending          // a decision is on its way to the Backend
	stateExpired          // withdrawn (expiredWhy); it can no longer be answered
)

type entry struct {
	ask      serve.Ask
	same     askIdentity // identity(ask): equal for identical asks
	state    askState
	selected bool
	// diff previews a write or edit ask against the file as it was read
	// when the ask arrived, or when it was shown if diffLate (diffs.go);
	// nil unless diffState is diffKept, or diffStale while it is read again.
	diff      *preview.Diff
	diffState diffState
	diffLate  bool      // the diff was not kept and is read when shown
	diffRead  time.Time // when a late diff, or one read again, was read
	diffStamp string    // the file's stamp (FileStamp) when the diff was read
	// diffStale: the file changed since the diff was read; it is being
	// read again and approvals wait. diffReread: the diff shown was read
	// again after the file changed.
	diffStale  bool
	diffReread bool
	// seen[k-1]: the field with must ordinal k (its change's lines, values
	// and units) has been on screen whole; seenAll: every one has
	// (decisions 0154, 0159). Reset when a diff arrives.
	seen    []bool
	seenAll bool
	// why it expired, when not because the child stopped waiting.
	why string
	// unsent names the person's decision the hub has not confirmed, which
	// the approver keeps sending in memory only: quitting loses it.
	unsent string
	// lost is the refusal of the person's decision when another approver
	// decided first; the answer that arrives then says whose it was.
	lost string
}

type mode int

const (
	modeQueue mode = iota
	modeScope
	modeReason
	modeView
	modeGrants
	modeLog
	modeQuit
	modeRule
	modeDenySession
)

type sessionState struct {
	serving bool
	pid     int  // of the other node, when served elsewhere (0: not known yet)
	permtui bool // that node is another permtui
}

// armedPress is the first press of a decision key under ConfirmDouble.
type armedPress struct {
	key     string
	targets []serve.AskID
}

// Model is the console. New returns a pointer; Update mutates it and returns
// the same pointer.
type Model struct {
	*common
	opts Options
	help help.Model

	queue      []*entry
	shownCache shownCache // the queue as filtered and grouped
	highlight  serve.AskID
	// cursorShifted is set when the highlighted ask changed under the
	// person (it was answered or removed by an event); the next decision key
	// is refused so nobody answers an ask they have not looked at.
	cursorShifted bool
	// settleUntil: decision keys do nothing before this time, because the
	// highlighted row changed or moved without the person moving it.
	settleUntil time.Time

	sessions     map[string]sessionState
	policy       serve.PolicyStatus // the latest, once policyLoaded
	policyLoaded bool
	degraded     map[string]string // area → problem, from serve.Degraded
	auto         autoCount         // answered by policy or grant
	// lastAuto, autoByAgent and otherAgents feed the activity line: the
	// latest answer by policy or grant, and how many each agent got (by
	// clipped name, at most maxAgents; otherAgents counts the rest).
	lastAuto    *autoAnswer
	autoByAgent map[string]*autoCount
	otherAgents autoCount
	expired     int
	invalid     int
	log         []logEntry

	// The diffs kept and their reads (diffs.go): diffs kept, diffReads
	// commands reading, diffQueue asks waiting for one.
	diffs     budget.Budget
	diffReads budget.Budget
	diffQueue []serve.AskID

	// filter narrows the queue to asks it matches (/); grouped
	// orders it by root session and agent (t). See shown.go.
	filter      string
	filtering   bool // the filter input has the keys
	filterInput textinput.Model
	grouped     bool

	// mode says which overlay is open (active maps it to its component);
	// each component keeps its own state.
	mode       mode
	scope      scopeDialog
	reason     reasonDialog
	pager      pager
	grantList  grantList
	quitDialog quitDialog
	ruleDialog ruleDialog
	denyDialog denyDialog

	// leaveWaiting: the person quit choosing to leave the waiting asks for
	// the next server (LeaveWaiting).
	leaveWaiting bool

	status   string
	statusAt time.Time
	// statusSettle: the status says a decision key was ignored while the
	// highlight settled; any other key makes it stale.
	statusSettle bool
	// statusHolds, when set, says whether the status still holds; it goes
	// once not: one about an ask ("already being answered") when the
	// highlight is on another, a warning that y acts on the selection, not
	// the highlight, when the filter hid the selection or the highlight
	// joined it.
	statusHolds func() bool
	// sent remembers each decision on its way, so the log can say which
	// scope the person chose (the response alone cannot), and which ask a
	// decision was for when the ask ends with no answer.
	sent map[serve.AskID]sentDecision
	// held keeps the log line of an ask answered while the person's own
	// decision was on its way, until Decide says whether theirs was it.
	held   map[serve.AskID]logEntry
	streak autoStreak
	// yourDeny is the session deny the person made last here (N), so the
	// waiting asks it denies at once are said to be theirs.
	yourDeny   *sessionRule
	armed      *armedPress
	titleCount int
}

// New builds the console.
func New(opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Settle = cmp.Or(opts.Settle, DefaultSettle) // a negative one stays: off
	opts.Refresh = cmp.Or(opts.Refresh, time.Second)
	if opts.ReadFile == nil {
		opts.ReadFile = preview.ReadCurrent
	}
	if opts.FileStamp == nil {
		opts.FileStamp = statStamp
	}
	if opts.Attention == nil {
		opts.Attention = os.Stdout
	}
	c := &common{width: 80, height: 24, styles: DefaultStyles(), keys: DefaultKeyMap(), home: opts.Home}
	hm := help.New()
	hm.Width = c.width
	m := &Model{
		common:      c,
		opts:        opts,
		help:        hm,
		sessions:    map[string]sessionState{},
		sent:        map[serve.AskID]sentDecision{},
		held:        map[serve.AskID]logEntry{},
		autoByAgent: map[string]*autoCount{},
		grantList:   grantList{common: c, revoked: map[sessionRule]bool{}},
		degraded:    map[string]string{},
		titleCount:  -1,
		diffs:       budget.Budget{Limit: budget.Limit{Bytes: diffBudget}},
		diffReads:   budget.Budget{Limit: budget.Limit{Count: maxDiffReads}},
	}
	m.filterInput = newInput("/", 200)
	m.filterInput.Placeholder = "text of the row, agent: cwd: surface: session:, ~fuzzy; enter keeps"
	c.q = m
	m.scope = newScopeDialog(c, opts.OverHub, opts.Backend)
	m.reason = newReasonDialog(c)
	m.denyDialog = newDenyDialog(c)
	m.pager = pager{common: c, vp: viewport.New(80, 10)}
	m.quitDialog = quitDialog{common: c, canLeave: opts.CanLeave, overHub: opts.OverHub}
	m.ruleDialog = newRuleDialog(c)
	return m
}

// LeaveWaiting reports whether the person quit choosing to leave the asks
// still waiting for the next server instead of denying them; the caller
// tells the server (serve.Server.LeaveWaitingOnExit) before stopping it.
func (m *Model) LeaveWaiting() bool { return m.leaveWaiting }

// Init sets the window title and starts the redraw ticker.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.titleCmd(), m.tickCmd())
}

// Update applies one message, lets go of what a closed overlay showed, then
// asks for the highlighted ask's diff if it was not kept.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	if m.statusHolds != nil && !m.statusHolds() {
		m.status, m.statusHolds = "", nil
	}
	m.releaseClosed()
	if _, open := m.active().(*pager); open {
		m.sizePager(false)
	}
	m.noteChangeSeen()
	if m.mode == modeScope {
		_, _, height := m.frame()
		m.scope.noteSeen(height)
	}
	return m, tea.Batch(cmd, m.showDiff())
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.Width = msg.Width
		m.reason.resize()
		m.ruleDialog.resize()
		m.denyDialog.resize()
		m.sizePager(true)
		return nil
	case EventMsg:
		before := m.highlightPlace()
		cmd := m.applyEvent(msg.Event)
		m.settleIfMoved(before)
		m.closeStaleOverlay()
		return tea.Batch(cmd, m.refreshRuleWaiting(), m.titleCmd())
	case decidedMsg:
		before := m.highlightPlace()
		m.applyDecided(msg)
		m.settleIfMoved(before)
		m.closeStaleOverlay()
		return m.titleCmd()
	case revokedMsg:
		m.applyRevoked(msg)
		return nil
	case previewMsg:
		return m.applyPreview(msg)
	case stampsMsg:
		return m.applyStamps(msg)
	case tickMsg:
		return tea.Batch(m.tickCmd(), m.stampCmd())
	case tea.MouseMsg:
		return m.mouse(msg)
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && !m.typing() {
			if msg.Paste {
				return nil // pasted text never decides anything
			}
			if len(msg.Runes) > 1 {
				return m.handleKeys(msg.Runes)
			}
		}
		return tea.Batch(m.handleKey(msg), m.titleCmd())
	}
	if o := m.active(); o != nil {
		return m.overlayMsg(o, msg) // a text input takes more than keys
	}
	return nil
}

// typing: a text input has the keys, so runes are text, a paste included.
func (m *Model) typing() bool {
	return m.mode == modeReason || m.mode == modeRule || m.mode == modeDenySession || m.filtering ||
		(m.mode == modeScope && m.scope.editing)
}

// handleKeys applies keys typed faster than the terminal is read: Bubble Tea
// delivers such a run of runes as one message, which matches no binding.
func (m *Model) handleKeys(runes []rune) tea.Cmd {
	cmds := make([]tea.Cmd, 0, len(runes)+1)
	for _, r := range runes {
		cmds = append(cmds, m.handleKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
	}
	return tea.Batch(append(cmds, m.titleCmd())...)
}

func (m *Model) tickCmd() tea.Cmd {
	if m.opts.Refresh < 0 {
		return nil
	}
	return tea.Tick(m.opts.Refresh, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// applyEvent folds one serving-loop event into the state.
func (m *Model) applyEvent(ev serve.Event) tea.Cmd {
	switch ev := ev.(type) {
	case serve.AskQueued:
		return m.enqueue(ev.Ask)
	case serve.Decided:
		m.applyResponse(ev)
	case serve.Withdrawn:
		m.applyWithdrawn(ev)
	case serve.Invalid:
		m.invalid++
		m.warn("rejected request " + Sanitize(ev.Path) + ": " + Sanitize(ev.Reason))
	case serve.Skipped:
		// The console fell behind; what it was not sent one by one is
		// counted, and itemized in the audit log.
		m.auto.approved += ev.AutoApproved
		m.auto.denied += ev.AutoDenied
		m.expired += ev.Expired
		m.invalid += ev.Invalid
		m.addLog(logEntry{note: "⚠ the console fell behind: " + itoa(ev.Approved+ev.Denied+ev.Unavailable+ev.AutoApproved+ev.AutoDenied) + " answers, " + itoa(ev.Expired) + " expiries and " + itoa(ev.Invalid) + " rejected files are counted but not listed here (see the audit log and permtui.log)"})
	case serve.Forgotten:
		delete(m.sessions, ev.Session)
	case serve.Serving:
		m.sessions[ev.Session] = sessionState{serving: true}
	case serve.ServedElsewhere:
		m.sessions[ev.Session] = sessionState{pid: ev.PID, permtui: ev.Permtui}
	case serve.PolicyStatus:
		// The header has room for one problem; the log keeps all of them.
		if !slices.Equal(ev.Problems, m.policy.Problems) {
			for _, p := range ev.Problems {
				m.addLog(logEntry{note: "⚠ policy: " + Sanitize(p)})
			}
		}
		if ev.NoFile != "" && ev.NoFile != m.policy.NoFile {
			m.addLog(logEntry{note: "⚠ policy: " + Sanitize(ev.NoFile)})
		}
		if len(ev.ProjectFiles) > 0 && (!slices.Equal(ev.ProjectFiles, m.policy.ProjectFiles) || ev.ProjectAllowsHeld != m.policy.ProjectAllowsHeld) {
			m.addLog(logEntry{note: projectNote(ev)})
		}
		ev.Problems, ev.ProjectFiles = slices.Clone(ev.Problems), slices.Clone(ev.ProjectFiles)
		m.policy, m.policyLoaded = ev, true
	case serve.WriteFailed:
		what := "ask " + askNumber(ev.Ask)
		if e := m.find(ev.Ask); e != nil {
			what = label(e)
		}
		if ev.Unread { // no fault: it waits for a child (decision 0201)
			m.warn(what + ": " + Sanitize(ev.Err))
			break
		}
		m.warn("answer not written yet for " + what + ": " + Sanitize(ev.Err) + " (retrying)")
	case serve.History:
		m.addHistory(ev.Records)
	case serve.GrantsChanged:
		m.grantList.set(ev.Grants)
	case serve.ScopesChanged:
		m.rescoped(ev)
	case serve.DeniesChanged:
		m.grantList.setDenies(ev.Denies)
		if d := m.yourDeny; d != nil && !slices.ContainsFunc(ev.Denies[d.session], func(x serve.SessionDeny) bool { return x.Grant == d.grant }) {
			m.yourDeny = nil // revoked: a like deny recorded later is not the person's N
		}
	case serve.Degraded:
		if ev.Problem == "" {
			delete(m.degraded, ev.Area)
			m.setStatus(ev.Area + " works again")
			break
		}
		m.degraded[ev.Area] = ev.Problem
		m.addLog(logEntry{note: "⚠ " + ev.Area + ": " + Sanitize(ev.Problem)})
	case serve.Repaired:
		m.warn("repaired " + ev.Area + ": " + Sanitize(ev.What))
	}
	return nil
}

func (m *Model) enqueue(a serve.Ask) tea.Cmd {
	if m.find(a.ID) != nil {
		return nil
	}
	if a.Request == nil { // a serve bug; say so rather than drop it silently
		m.warn("ask " + askNumber(a.ID) + " arrived without its request and cannot be shown")
		return nil
	}
	m.queue = append(m.queue, &entry{ask: a, same: identity(a)})
	m.queueChanged()
	if m.highlight == 0 {
		m.keepHighlightShown()
	}
	return tea.Batch(m.attentionCmd(), m.wantDiff(m.queue[len(m.queue)-1]))
}

// applyWithdrawn folds an ask's withdrawal into the state.
func (m *Model) applyWithdrawn(ev serve.Withdrawn) {
	// An ask whose answer is being written is closed by Decide's result.
	if e := m.find(ev.ID); e != nil && e.state != stateExpired && (ev.Pending || e.state != stateSending) {
		e.why = withdrawnWhy(ev)
		m.expire(e)
		m.setStatus("expired: " + label(e) + " (" + expiredWhy(e) + ")")
		m.addLog(logEntry{note: "⌛ expired  " + askLabel(e.ask) + " (" + expiredWhy(e) + ")"})
	} else if s, ok := m.sent[ev.ID]; ok && e == nil {
		// Sent and taken, then let go of with no answer (a hub ask its
		// relay no longer had): the person's decision answered nothing.
		delete(m.sent, ev.ID)
		if s.ask.Request != nil {
			m.warn("your decision on " + askLabel(s.ask) + " answered nothing: " + cmp.Or(withdrawnWhy(ev), stoppedWaiting))
		}
	}
}

// sentDecision is a decision on its way and the ask it is for.
type sentDecision struct {
	d   serve.Decision
	ask serve.Ask
}

// applyResponse handles a written response: it leaves the queue (if it was
// there), is counted and logged. Automatic answers to queued asks happen when
// a new whole-session grant covers them; the status line says so.
func (m *Model) applyResponse(ev serve.Decided) {
	e := m.find(ev.Ask.ID)
	wasQueued := e != nil
	if wasQueued {
		m.remove(ev.Ask.ID, !ev.Auto)
	}
	l, last := decidedEntry(ev)
	if wasQueued && e.lost != "" && !ev.Auto {
		defer m.setStatus(lostNote(l, e.lost))
	}
	if ev.Auto {
		m.auto.add(ev.Response.Approved)
		if ev.Ask.Request != nil {
			m.countAuto(last.agent, ev.Response.Approved)
		}
		last.at = m.opts.Now()
		m.lastAuto = &last
	}
	s, sent := m.sent[ev.Ask.ID]
	if sent && !ev.Auto {
		l.choice = termsafe.ClipNeutral(choiceWords(s.d, ev.Ask), textBytes)
	}
	delete(m.sent, ev.Ask.ID)
	if sent && wasQueued && !ev.Auto {
		// Decide has not returned: at a hub another approver may have won.
		m.held[ev.Ask.ID] = l
	} else {
		m.addLog(l)
	}
	if ev.Auto && wasQueued {
		if !strings.HasPrefix(m.status, m.streak.lead) {
			m.streak.lead = "" // the status line moved on from the report
		}
		if m.byYourDeny(ev) {
			m.streak.byDeny++
			m.streak.denyWords = "session deny " + grantText(m.yourDeny.grant)
		} else {
			m.streak.add(ev.Response.Approved)
		}
		m.status, m.statusAt = termsafe.ClipNeutral(m.streak.String(), textBytes), m.opts.Now()
	}
}

// byYourDeny: the answer is a denial by the session deny the person made
// last in this console, of the root session it holds for.
func (m *Model) byYourDeny(ev serve.Decided) bool {
	ds, d := ev.Response.DecidedBy, m.yourDeny
	return d != nil && !ev.Response.Approved && ds != nil && ds.Kind == wire.DecidedByRule &&
		deref(ds.Origin) == resolve.OriginSession && ds.Surface == d.grant.Surface && deref(ds.Pattern) == d.grant.Pattern &&
		ev.Ask.Session == d.session
}

func (m *Model) applyDecided(msg decidedMsg) {
	e := m.find(msg.Decision.Ask)
	if e == nil { // already answered and removed by its Decided event
		m.settleHeld(msg)
		return
	}
	if msg.Err != nil {
		delete(m.sent, e.ask.ID)
		if msg.Decision.DenyFor != nil {
			m.yourDeny = nil // not made: a like deny is someone else's
		}
	}
	switch {
	case msg.Err == nil:
		m.remove(e.ask.ID, true)
	case serve.IsExpired(msg.Err): // any other error leaves the ask pending
		if e.state != stateExpired {
			m.expire(e)
		}
		m.setStatus("too late: " + label(e) + " expired before the answer; nothing was sent")
	default:
		if e.state == stateSending {
			e.state = statePending
		}
		if errors.Is(msg.Err, serve.ErrDelivering) && e.unsent == "" { // a later one is refused while it is sent
			e.unsent = decisionWords(msg.Decision, e.ask) + ": " + label(e)
		}
		if errors.Is(msg.Err, serve.ErrAlreadyDecided) {
			e.lost = Sanitize(msg.Err.Error())
		}
		m.warn("could not answer " + label(e) + ": " + Sanitize(msg.Err.Error()))
	}
}

// settleHeld logs the answer held for Decide's result; when the person's
// decision was refused, the answer was someone else's, and the status says
// so (adversarial pass adv2, finding F6).
func (m *Model) settleHeld(msg decidedMsg) {
	l, ok := m.held[msg.Decision.Ask]
	if !ok {
		return
	}
	delete(m.held, msg.Decision.Ask)
	if msg.Err == nil {
		m.addLog(l)
		return
	}
	l.choice = "" // not the person's choice
	m.addLog(l)
	m.warn(lostNote(l, Sanitize(msg.Err.Error())))
}

// lostNote says that the person's decision was refused, and the answer
// the ask got instead: what, and by whom.
func lostNote(l logEntry, refusal string) string {
	return "could not answer " + l.label + ": " + refusal + "; it was " + outcomeWords(l.outcome) + " by " + l.by
}

func (m *Model) applyRevoked(msg revokedMsg) {
	note := msg.rule.revokedNote()
	if msg.err != nil { // d may be pressed on it again
		delete(m.grantList.revoked, msg.rule)
		note = "⚠ could not revoke " + grantText(msg.rule.grant) + ": " + Sanitize(msg.err.Error())
	}
	m.addLog(logEntry{note: note})
	m.setStatus(note)
}

// revokedNote is the log's line for a revoked grant or session deny, now
// or, from the audit log, in an earlier run.
func (r sessionRule) revokedNote() string {
	kind := "whole-session grant "
	if r.deny {
		kind = "session deny "
	}
	return "revoked " + kind + grantText(r.grant) + " of " + Sanitize(r.session)
}

// expiredWhy says why an ask can no longer be answered: withdrawnWhy's
// reason, else the child stopped waiting.
func expiredWhy(e *entry) string { return cmp.Or(e.why, stoppedWaiting) }

const stoppedWaiting = "the child stopped waiting"

// rejudgedReason: over a hub, the relay sends the ask again naming what
// its grants now reach (decision 0246).
const rejudgedReason = "the policy changed what its grants reach; the ask follows again with the new reach"

// withdrawnWhy is why a withdrawn ask expired, if not that the child
// stopped waiting: its request file was replaced (the new file is a new
// ask), its relay judged it again, or the hub approver's reason (its relay
// moved to another host; its relay no longer has it).
func withdrawnWhy(ev serve.Withdrawn) string {
	switch {
	case ev.Replaced:
		return serve.ReplacedReason
	case ev.Rejudged:
		return rejudgedReason
	case ev.Why != "":
		return Sanitize(ev.Why)
	}
	return ""
}

// maxExpiredKept bounds the expired asks the queue keeps: serve has let
// them go, the header counts them and the log names each, so beyond it the
// oldest (but the highlighted) leave the queue.
const maxExpiredKept = 16

// expire marks an ask expired. Its diff goes: nothing can act on it.
func (m *Model) expire(e *entry) {
	e.state = stateExpired
	e.selected = false
	m.expired++
	m.dropDiff(e)
	e.diffState, e.diffLate = diffNone, false
	expired := slices.DeleteFunc(slices.Clone(m.queue), func(o *entry) bool { return o.state != stateExpired })
	drop := len(expired) - maxExpiredKept
	for _, o := range expired {
		if drop > 0 && o != e && o.ask.ID != m.highlight {
			m.remove(o.ask.ID, false)
			drop--
		}
	}
}

// remove drops an ask from the queue. byPerson says the person's own answer
// removed it, so moving the highlight is expected.
func (m *Model) remove(id serve.AskID, byPerson bool) {
	i := indexOf(m.queue, id)
	if i < 0 {
		return
	}
	at := indexOf(m.shown(), id)
	m.dropDiff(m.queue[i])
	m.queue = slices.Delete(m.queue, i, i+1)
	m.queueChanged()
	if m.highlight != id {
		return
	}
	m.highlightAt(at)
	m.cursorShifted = m.highlight != 0 && !byPerson
}

// highlightAt highlights the shown ask at i, or the nearest end; none when
// nothing is shown.
func (m *Model) highlightAt(i int) {
	m.highlight = 0
	if shown := m.shown(); len(shown) > 0 {
		m.highlight = shown[min(max(i, 0), len(shown)-1)].ask.ID
	}
}

// indexOf is the position of an ask among entries, or -1.
func indexOf(es []*entry, id serve.AskID) int {
	return slices.IndexFunc(es, func(e *entry) bool { return e.ask.ID == id })
}

// place is where the highlight is: which ask, on which row.
type place struct {
	ask serve.AskID
	row int
}

func (m *Model) highlightPlace() place {
	return place{m.highlight, lineOf(m.queueLines(), m.highlight)}
}

// settleIfMoved starts the settle time when the highlighted ask or its row
// changed since before: what the person was looking at is not what a
// decision key would now answer.
func (m *Model) settleIfMoved(before place) {
	if now := m.highlightPlace(); now != before && now.ask != 0 && m.opts.Settle > 0 {
		m.settleUntil = m.opts.Now().Add(m.opts.Settle)
	}
}

// settling reports whether decision keys must wait; asking restarts the wait.
func (m *Model) settling() bool {
	now := m.opts.Now()
	if !now.Before(m.settleUntil) {
		return false
	}
	m.settleUntil = now.Add(m.opts.Settle)
	return true
}

func (m *Model) find(id serve.AskID) *entry {
	if i := indexOf(m.queue, id); i >= 0 {
		return m.queue[i]
	}
	return nil
}

func (m *Model) current() *entry { return m.find(m.highlight) }

// hidden reports whether the filter hides e from the queue.
func (m *Model) hidden(e *entry) bool {
	return m.filter != "" && !slices.Contains(m.shown(), e)
}

// pending lists the asks still waiting for an answer.
func (m *Model) pending() []*entry {
	return slices.DeleteFunc(slices.Clone(m.queue), func(e *entry) bool { return e.state != statePending })
}

// unsent names the decisions the hub has not confirmed, of asks still open.
func (m *Model) unsent() []string {
	var out []string
	for _, e := range m.queue {
		if e.state != stateExpired && e.unsent != "" {
			out = append(out, e.unsent)
		}
	}
	return out
}

func (m *Model) pendingCount() int {
	n := 0
	for _, e := range m.queue {
		if e.state != stateExpired {
			n++
		}
	}
	return n
}

// setStatus replaces the status line and ends any run of automatic answers.
func (m *Model) setStatus(s string) {
	m.status, m.statusAt, m.statusSettle, m.statusHolds = termsafe.ClipNeutral(s, textBytes), m.opts.Now(), false, nil
	m.streak = autoStreak{}
}

// warn puts a problem on the status line and, marked ⚠, in the log.
func (m *Model) warn(note string) {
	m.addLog(logEntry{note: "⚠ " + note})
	m.setStatus(note)
}

// statusTTL is how long a status message stays: long enough to read, short
// enough that it does not describe a queue that has moved on.
const statusTTL = 10 * time.Second

func (m *Model) addLog(l logEntry) {
	l.note = termsafe.ClipNeutral(l.note, textBytes)
	if l.at.IsZero() {
		l.at = m.opts.Now()
	}
	// The same answer again, right after, is counted on one line: a burst of
	// twenty identical answers would push everything else out of sight.
	if n := len(m.log); n > 0 && m.log[n-1].same(l) {
		m.log[n-1].at = l.at
		m.log[n-1].count = max(m.log[n-1].count, 1) + 1
	} else {
		m.log = append(m.log, l)
		if len(m.log) > logCap {
			m.log = slices.Delete(m.log, 0, len(m.log)-logCap)
		}
	}
	if m.mode == modeLog {
		m.sizePager(true)
	}
}

// servedIDs returns the session ids in a stable order, split by state.
func (m *Model) servedIDs() (serving, elsewhere []string) {
	for id, s := range m.sessions {
		if s.serving {
			serving = append(serving, id)
		} else {
			elsewhere = append(elsewhere, id)
		}
	}
	sort.Strings(serving)
	sort.Strings(elsewhere)
	return serving, elsewhere
}

// addHistory puts decisions of earlier runs, from the audit log, at the
// head of the log: a restarted console still shows what happened. They are
// named from the recorded facts (agent, surface, first match value).
func (m *Model) addHistory(recs []serve.AuditRecord) {
	for _, r := range recs {
		at := time.UnixMilli(r.DecidedAt).In(m.opts.Now().Location())
		label := termsafe.Clip(r.ShownAgent(), nameBytes) + " · " + termsafe.Clip(r.Surface, nameBytes)
		if len(r.MatchValues) > 0 {
			label += " · " + termsafe.Clip(r.MatchValues[0], textBytes)
		}
		if r.Kind == serve.AuditRevoked {
			rule := sessionRule{session: r.ServedSession, deny: r.SessionDeny != nil}
			switch {
			case rule.deny:
				rule.grant = r.SessionDeny.Grant
			case len(r.Grants) > 0:
				rule.grant = r.Grants[0]
			}
			m.addLog(logEntry{at: at, note: rule.revokedNote()}) // addLog caps it
			continue
		}
		if r.Kind == serve.AuditExpired {
			why := stoppedWaiting
			if r.Reason == serve.ReplacedReason {
				why = r.Reason
			}
			m.addLog(logEntry{at: at, note: "⌛ expired  " + label + " (" + why + ")"})
			continue
		}
		state := r.State
		if state == wire.StateApprovedForServingSession {
			state = wire.StateApproved // the wire never sees it; grants say the rest
		}
		l := logEntry{at: at, label: label,
			outcome: outcomeOf(wire.Response{Approved: r.Approved, State: state}),
			by:      decidedBy(r.DecidedBy, r.Auto, r.Approved), reason: termsafe.Clip(r.Reason, textBytes)}
		switch {
		case len(r.Grants) > 0:
			l.choice = termsafe.ClipNeutral("recorded for the whole session "+grantsText(r.Grants), textBytes)
		case len(r.ChildGrants) > 0:
			l.choice = termsafe.ClipNeutral("for this subagent; the child records "+grantsText(r.ChildGrants), textBytes)
		}
		m.addLog(l)
	}
	m.addLog(logEntry{note: "↑ " + plural(len(recs), "entry", "entries") + " of earlier runs, from the audit log"})
}

// autoStreak counts the automatic answers to queued asks since the status
// line last said anything else; byDeny counts those denied by the person's
// own latest session deny (denyWords names it), which serve answers at once
// when it is recorded. lead is a rule write's report, which the answers of
// the reload it causes follow.
type autoStreak struct {
	autoCount
	byDeny    int
	denyWords string
	lead      string
}

func (s autoStreak) String() string {
	var yours string
	if s.lead != "" {
		yours = s.lead + "; "
	}
	if s.byDeny > 0 {
		yours += "✗ " + plural(s.byDeny, "waiting ask") + " denied by your N (" + s.denyWords + "); "
	}
	n := s.approved + s.denied
	if n == 0 {
		return yours + "l names each"
	}
	msg := yours + plural(n, "queued ask") + " answered by recorded authority (l names each):"
	if s.approved > 0 {
		msg += " ✓ " + itoa(s.approved) + " approved"
	}
	if s.denied > 0 {
		msg += " ✗ " + itoa(s.denied) + " denied"
	}
	return msg
}
