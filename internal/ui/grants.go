package ui

import (
	"maps"
	"slices"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
	"github.com/permtui/permtui/internal/wire"
)

// grantRow is a row of the list: a session rule, with a deny's reason.
type grantRow struct {
	sessionRule
	reason string
}

// grantList lists the whole-session grants, then the session denies
// (decision 0104), one row each, and revokes the highlighted one. It keeps
// its place while closed.
type grantList struct {
	*common
	grants map[string][]wire.Grant
	denies map[string][]serve.SessionDeny
	rows   []grantRow
	cursor int
	// revoked are the rows d was pressed on, until serve's new list drops
	// them: a second d (a habit: vim's dd) must not revoke twice, nor the
	// row that takes the place of the first.
	revoked map[sessionRule]bool
}

// sessionRule is a whole-session grant, or with deny a session deny, of a
// root session.
type sessionRule struct {
	session string
	grant   wire.Grant
	deny    bool
}

// set replaces the grants.
func (g *grantList) set(grants map[string][]wire.Grant) {
	g.grants = grants
	g.rebuild()
}

// setDenies replaces the session denies.
func (g *grantList) setDenies(denies map[string][]serve.SessionDeny) {
	g.denies = denies
	g.rebuild()
}

// rebuild lists the grants, sessions in id order, then the denies.
func (g *grantList) rebuild() {
	g.rows = g.rows[:0]
	for _, s := range slices.Sorted(maps.Keys(g.grants)) {
		for _, gr := range g.grants[s] {
			g.rows = append(g.rows, grantRow{sessionRule: sessionRule{session: s, grant: gr}})
		}
	}
	for _, s := range slices.Sorted(maps.Keys(g.denies)) {
		for _, d := range g.denies[s] {
			g.rows = append(g.rows, grantRow{sessionRule{s, d.Grant, true}, d.Reason})
		}
	}
	g.rows = slices.Clip(g.rows)
	g.cursor = min(g.cursor, max(0, len(g.rows)-1))
	maps.DeleteFunc(g.revoked, func(k sessionRule, _ bool) bool {
		return !slices.ContainsFunc(g.rows, func(r grantRow) bool { return r.sessionRule == k })
	})
}

// counts are how many grants and session denies are listed.
func (g *grantList) counts(inForce func(session string) bool) (grants, denies int) {
	for _, r := range g.rows {
		switch {
		case !inForce(r.session):
		case r.deny:
			denies++
		default:
			grants++
		}
	}
	return grants, denies
}

func (g *grantList) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	switch {
	case key.Matches(k, g.keys.Close, g.keys.Grants):
		return closeAction{}, nil
	case key.Matches(k, g.keys.Up):
		g.cursor = max(g.cursor-1, 0)
	case key.Matches(k, g.keys.Down):
		g.cursor = min(g.cursor+1, max(len(g.rows)-1, 0))
	case key.Matches(k, g.keys.Top):
		g.cursor = 0
	case key.Matches(k, g.keys.Bottom):
		g.cursor = max(len(g.rows)-1, 0)
	case key.Matches(k, g.keys.Revoke):
		if g.cursor >= len(g.rows) {
			return statusAction{"nothing to revoke"}, nil
		}
		r := g.rows[g.cursor]
		if g.revoked[r.sessionRule] {
			return statusAction{"already revoked; it leaves the list when serve confirms"}, nil
		}
		g.revoked[r.sessionRule] = true
		return revokeAction{r}, nil
	}
	return nil, nil
}

func (g *grantList) gone() string { return "" }

func (g *grantList) help() help.KeyMap {
	return g.keys.overlayHelp(g.keys.Up, g.keys.Down, g.keys.Top, g.keys.Bottom, g.keys.Revoke)
}

func (g *grantList) view(height int) []string {
	s := g.styles
	lines := []string{g.rule("whole-session grants"),
		s.Muted.Render("permtui approves every later ask of the session that one of these covers."),
		s.Muted.Render("Grants for a single subagent are kept by that child and are not listed.")}
	if len(g.rows) == 0 {
		return append(lines, "", "  No whole-session grants.")
	}
	session, denies, at := "", false, 0
	for i, r := range g.rows {
		if r.deny && !denies {
			denies, session = true, ""
			lines = append(lines, "", g.rule("session denies"),
				s.Muted.Render("permtui denies every later ask of the session that one of these covers,"),
				s.Muted.Render("with the reason shown, before grants and the policy."))
		}
		if r.session != session {
			session = r.session
			lines = append(lines, "", "session "+Sanitize(session))
		}
		mark := "  "
		if i == g.cursor {
			mark = "▸ "
		}
		line := mark + pad(Sanitize(r.grant.Surface), 24) + " " + blanked(r.grant.Pattern)
		if r.deny {
			line += " — " + Sanitize(r.reason)
		}
		if g.revoked[r.sessionRule] {
			line += " (revoked)"
		}
		if i == g.cursor {
			line, at = s.Strong.Render(line), len(lines)
		}
		lines = append(lines, line)
	}
	return g.scrolled(lines, height, at, at+1)
}
