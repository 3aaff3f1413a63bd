package ui

import (
	"slices"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/wire"
)

type grantRow struct {
	session string
	grant   wire.Grant
}

// grantList lists the whole-session grants, one row each, and revokes the
// highlighted one. It keeps its place while closed.
type grantList struct {
	*common
	rows   []grantRow
	cursor int
}

// set replaces the grants, sessions in id order.
func (g *grantList) set(grants map[string][]wire.Grant) {
	g.rows = g.rows[:0]
	for _, s := range sortedKeys(grants) {
		for _, gr := range grants[s] {
			g.rows = append(g.rows, grantRow{session: s, grant: gr})
		}
	}
	g.rows = slices.Clip(g.rows)
	g.cursor = min(g.cursor, max(0, len(g.rows)-1))
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
	case key.Matches(k, g.keys.Revoke):
		if g.cursor >= len(g.rows) {
			return statusAction{"no grant to revoke"}, nil
		}
		return revokeAction{g.rows[g.cursor]}, nil
	}
	return nil, nil
}

func (g *grantList) gone() string { return "" }

func (g *grantList) help() help.KeyMap {
	return g.keys.overlayHelp(g.keys.Up, g.keys.Down, g.keys.Revoke)
}

func (g *grantList) view(int) []string {
	s := g.styles
	lines := []string{g.rule("whole-session grants"),
		s.Muted.Render("permtui approves every later ask of the session that one of these covers."),
		s.Muted.Render("Grants for a single subagent are kept by that child and are not listed.")}
	if len(g.rows) == 0 {
		return append(lines, "", "  No whole-session grants.")
	}
	session := ""
	for i, r := range g.rows {
		if r.session != session {
			session = r.session
			lines = append(lines, "", "session "+Sanitize(session))
		}
		mark := "  "
		if i == g.cursor {
			mark = "▸ "
		}
		line := mark + pad(Sanitize(r.grant.Surface), 24) + " " + Sanitize(r.grant.Pattern)
		if i == g.cursor {
			line = s.Cursor.Render(line)
		}
		lines = append(lines, line)
	}
	return lines
}
