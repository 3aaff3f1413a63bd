package ui

import "github.com/charmbracelet/lipgloss"

// Styles is the console's look in one place. Colour only ever repeats what a
// word or glyph already says, so the console reads the same under NO_COLOR.
type Styles struct {
	Title      lipgloss.Style
	Muted      lipgloss.Style
	Rule       lipgloss.Style
	Cursor     lipgloss.Style // the highlighted queue row
	Expired    lipgloss.Style
	Approved   lipgloss.Style
	Denied     lipgloss.Style
	Warning    lipgloss.Style
	Label      lipgloss.Style
	Value      lipgloss.Style
	Boundary   lipgloss.Style
	Annotation lipgloss.Style
	Status     lipgloss.Style
	Option     lipgloss.Style // the chosen option in a choice list
}

// DefaultStyles returns adaptive colours that work on light and dark
// backgrounds.
func DefaultStyles() Styles {
	var (
		dim    = lipgloss.AdaptiveColor{Light: "#6c6c6c", Dark: "#8a8a8a"}
		accent = lipgloss.AdaptiveColor{Light: "#005faf", Dark: "#5fafff"}
		green  = lipgloss.AdaptiveColor{Light: "#007a00", Dark: "#5fd75f"}
		red    = lipgloss.AdaptiveColor{Light: "#c00000", Dark: "#ff5f5f"}
		amber  = lipgloss.AdaptiveColor{Light: "#8a5a00", Dark: "#ffaf00"}
		purple = lipgloss.AdaptiveColor{Light: "#6a3d9a", Dark: "#c39bd3"}
	)
	return Styles{
		Title:      lipgloss.NewStyle().Bold(true).Foreground(accent),
		Muted:      lipgloss.NewStyle().Foreground(dim),
		Rule:       lipgloss.NewStyle().Foreground(dim),
		Cursor:     lipgloss.NewStyle().Bold(true),
		Expired:    lipgloss.NewStyle().Foreground(dim),
		Approved:   lipgloss.NewStyle().Foreground(green),
		Denied:     lipgloss.NewStyle().Foreground(red),
		Warning:    lipgloss.NewStyle().Foreground(amber),
		Label:      lipgloss.NewStyle().Foreground(dim),
		Value:      lipgloss.NewStyle(),
		Boundary:   lipgloss.NewStyle().Bold(true),
		Annotation: lipgloss.NewStyle().Foreground(purple).Italic(true),
		Status:     lipgloss.NewStyle().Foreground(accent),
		Option:     lipgloss.NewStyle().Bold(true),
	}
}
