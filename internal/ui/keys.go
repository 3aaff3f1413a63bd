package ui

import "github.com/charmbracelet/bubbles/key"

// KeyMap is every key the console answers to. Change a key here and the
// help text follows.
type KeyMap struct {
	Up               key.Binding
	Down             key.Binding
	ApproveOnce      key.Binding
	ApproveSession   key.Binding
	Deny             key.Binding
	DenyReason       key.Binding
	DenySession      key.Binding
	Select           key.Binding
	ApproveIdentical key.Binding
	View             key.Binding
	Grants           key.Binding
	Log              key.Binding
	Rule             key.Binding
	ClearExpired     key.Binding
	Help             key.Binding
	Copy             key.Binding
	Filter           key.Binding
	Group            key.Binding
	Quit             key.Binding
	ForceQuit        key.Binding

	// Inside overlays.
	Confirm key.Binding
	Close   key.Binding
	Revoke  key.Binding
	Top     key.Binding
	Bottom  key.Binding
	// The scope dialog's marked option, when taller than the screen.
	PageUp   key.Binding
	PageDown key.Binding
	// In the rule dialog (R).
	RuleScope  key.Binding
	RuleAction key.Binding
	Leave      key.Binding // quit, leaving the waiting asks for the next server
	DenyQuit   key.Binding // quit, denying the waiting asks
	Edit       key.Binding // the scope dialog's whole-session pattern
	NextField  key.Binding // the session-deny dialog: reason or pattern
}

// DefaultKeyMap returns the console's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:               key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("↑/k", "up")),
		Down:             key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("↓/j", "down")),
		ApproveOnce:      key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "approve once")),
		ApproveSession:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "session approval…")),
		Deny:             key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "deny")),
		DenyReason:       key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "deny with reason…")),
		DenySession:      key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "deny for the session…")),
		Select:           key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "select")),
		ApproveIdentical: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve identical")),
		View:             key.NewBinding(key.WithKeys("v", "enter"), key.WithHelp("v/enter", "full view")),
		Grants:           key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "grants")),
		Log:              key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "decision log")),
		Rule:             key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "make a rule…")),
		ClearExpired:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "clear expired")),
		Help:             key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Copy:             key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy value")),
		Filter:           key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Group:            key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "group by session")),
		Quit:             key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit:        key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit; twice: now")),
		Confirm:          key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "confirm")),
		Close:            key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
		Revoke:           key.NewBinding(key.WithKeys("d", "delete"), key.WithHelp("d", "revoke")),
		Top:              key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g/home", "top")),
		Bottom:           key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G/end", "bottom")),
		PageUp:           key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up")),
		PageDown:         key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdown", "scroll down")),
		RuleScope:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "scope")),
		RuleAction:       key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "action")),
		Leave:            key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "leave them, quit")),
		DenyQuit:         key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "deny them, quit")),
		Edit:             key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit pattern")),
		NextField:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "reason/pattern")),
	}
}

// helpKeys adapts a fixed set of bindings to help.KeyMap, so each screen
// shows only the keys that work there.
type helpKeys struct {
	short []key.Binding
	full  [][]key.Binding
}

func (h helpKeys) ShortHelp() []key.Binding  { return h.short }
func (h helpKeys) FullHelp() [][]key.Binding { return h.full }

// queueHelp lists the queue's keys; below 80 columns the full help takes
// two taller columns, since three side by side would be cut. R is offered
// only where rules can be written.
func (k KeyMap) queueHelp(width int, rules bool) helpKeys {
	if !rules {
		k.Rule.SetEnabled(false) // k is a copy: the help skips disabled keys
	}
	closeHelp := relabel(k.Close, "close")
	revokeInGrants := relabel(k.Revoke, "revoke (in p)")
	look := []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.Select, k.View, k.Copy, k.Filter, k.Group, closeHelp}
	decide := []key.Binding{k.ApproveOnce, k.ApproveSession, k.ApproveIdentical, k.Deny, k.DenyReason, k.DenySession, k.ClearExpired}
	full := [][]key.Binding{look, decide, {k.Grants, revokeInGrants, k.Log, k.Rule, k.Help, k.Quit, k.ForceQuit}}
	if width < 80 { // the third column's keys join the first two
		full = [][]key.Binding{append(look, k.Grants, revokeInGrants, k.Log, k.Help), append(decide, k.Rule, k.Quit, k.ForceQuit)}
	}
	return helpKeys{
		// Short labels, so the line fits 60 columns with help last.
		short: []key.Binding{k.ApproveOnce, k.Deny, relabel(k.DenyReason, "reason…"),
			relabel(k.ApproveSession, "session…"), k.Help},
		full: full,
	}
}

func (k KeyMap) overlayHelp(extra ...key.Binding) helpKeys {
	return helpLine(append(append([]key.Binding{}, extra...), k.Close)...)
}

// helpLine is the help of an overlay's keys: the same line when the full
// help (?) was on as it opened.
func helpLine(keys ...key.Binding) helpKeys {
	return helpKeys{short: keys, full: [][]key.Binding{keys}}
}

// relabel is b with a shorter description, for the one-line help.
func relabel(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}
