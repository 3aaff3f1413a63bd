package ui

import "github.com/charmbracelet/lipgloss"

// Styles is the console's look in one place. Colour only ever repeats what a
// word or glyph already says, so the console reads the same under NO_COLOR.
type Styles struct {
	Title      lipgloss.Style
	Muted      lipgloss.Style // also rules, labels and expired rows
	Approved   lipgloss.Style
	Denied     lipgloss.Style
	Warning    lipgloss.Style
	Value      lipgloss.Style
	Strong     lipgloss.Style // a boundary value, the highlighted grant, the chosen option
	Annotation lipgloss.Style
	Status     lipgloss.Style
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
		Approved:   lipgloss.NewStyle().Foreground(green),
		Denied:     lipgloss.NewStyle().Foreground(red),
		Warning:    lipgloss.NewStyle().Foreground(amber),
		Value:      lipgloss.NewStyle(),
		Strong:     lipgloss.NewStyle().Bold(true),
		Annotation: lipgloss.NewStyle().Foreground(purple).Italic(true),
		Status:     lipgloss.NewStyle().Foreground(accent),
	}
}
