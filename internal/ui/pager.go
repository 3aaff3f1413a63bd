package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permtui/permtui/internal/serve"
)

// pager shows long text in a scrollable viewport: the full view of one ask
// or the decision log. The root gives it the text (fill), since the log is
// root state.
type pager struct {
	*common
	vp     viewport.Model
	ask    serve.AskID              // the ask in the full view; 0 for the log
	fill   func() ([]string, []int) // the text and its lines' owners (renderOwned); nil keeps what is shown
	owner  []int                    // the must ordinal of each line shown, for what has been seen
	viewed []bool                   // each line has been in the window since the text was filled
}

// release drops the text shown; open and refresh fill it again.
func (p *pager) release() {
	if p.fill != nil {
		p.fill, p.owner, p.viewed = nil, nil, nil
		p.vp.SetContent("")
	}
}

// refresh sizes the viewport and, when refill, replaces its text.
func (p *pager) refresh(width, height int, refill bool) {
	p.vp.Width, p.vp.Height = width, height
	if !refill || p.fill == nil {
		return
	}
	if lines, owner := p.fill(); lines != nil {
		p.vp.SetContent(strings.Join(lines, "\n"))
		p.owner, p.viewed = owner, make([]bool, len(owner))
	}
}

func (p *pager) update(msg tea.Msg) (action, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil, nil
	}
	opener := map[bool]key.Binding{true: p.keys.Log, false: p.keys.View}[p.ask == 0] // it closes what it opened
	switch {
	case key.Matches(k, p.keys.Close, opener, p.keys.Quit):
		return closeAction{}, nil
	case key.Matches(k, p.keys.Top):
		p.vp.GotoTop()
		return nil, nil
	case key.Matches(k, p.keys.Bottom):
		p.vp.GotoBottom()
		return nil, nil
	}
	if p.ask != 0 { // the full view decides on the ask it shows
		only := []serve.AskID{p.ask}
		switch {
		case key.Matches(k, p.keys.ApproveOnce):
			return decideAction{pressed: k.String(), what: "approve once", targets: only, d: once}, nil
		case key.Matches(k, p.keys.Deny):
			return decideAction{pressed: k.String(), what: "deny", targets: only, d: deny}, nil
		case key.Matches(k, p.keys.ApproveSession):
			return openScopeAction{p.ask}, nil
		case key.Matches(k, p.keys.DenyReason):
			return openReasonAction{only}, nil
		case key.Matches(k, p.keys.Copy):
			if e := p.q.find(p.ask); e != nil {
				return copyAction{copyText(e)}, nil
			}
		}
	}
	var cmd tea.Cmd
	p.vp, cmd = p.vp.Update(k)
	return nil, cmd
}

func (p *pager) gone() string {
	if p.ask != 0 && p.q.find(p.ask) == nil {
		return "that ask is no longer waiting"
	}
	return ""
}

func (p *pager) help() help.KeyMap {
	page := key.NewBinding(key.WithKeys("pgdown", "pgup"), key.WithHelp("pgdn/pgup", "page"))
	ends := key.NewBinding(key.WithKeys("g", "G"), key.WithHelp("g/G", "top/bottom"))
	if p.ask != 0 { // one line at 80 columns: the decisions first
		return p.keys.overlayHelp(relabel(p.keys.ApproveOnce, "approve"), p.keys.Deny, relabel(p.keys.DenyReason, "reason…"),
			relabel(p.keys.ApproveSession, "session…"), ends)
	}
	return p.keys.overlayHelp(p.keys.Up, p.keys.Down, page, ends)
}

func (p *pager) view(int) []string {
	title := "full view"
	if p.ask == 0 {
		title = "decision log"
	}
	// Say where the page is, so nobody takes the last visible line for the end.
	if total, shown := p.vp.TotalLineCount(), p.vp.VisibleLineCount(); total > shown {
		title += fmt.Sprintf(" · lines %d–%d of %d", p.vp.YOffset+1, p.vp.YOffset+shown, total)
	}
	return append([]string{p.rule(title)}, strings.Split(p.vp.View(), "\n")...)
}

// noteViewed records lines [from, to) as on screen and lists the must
// ordinals whose every line has now been on screen, in this window or an
// earlier one: a field taller than the window is seen by scrolling it.
func (p *pager) noteViewed(from, to int) []int {
	for i := from; i < min(to, len(p.viewed)); i++ {
		p.viewed[i] = true
	}
	return mustWhere(p.owner, func(a, b int) bool { return !slices.Contains(p.viewed[a:b], false) })
}
