package resolve

import (
	"slices"
	"strconv"
	"strings"
)

// OutOfForceDenies introduces, in the Problem of a config file rejected for
// its text, the denies written in it: they are out of force while it is
// rejected, and the person who wrote them should see which (decision 0158).
const OutOfForceDenies = "; denies written in it, now out of force: "

// maxSalvaged bounds the denies a problem names.
const maxSalvaged = 16

// salvageDenies lists the denies a rejected config's text writes under
// "permission", as surface and quoted pattern ("*" for a surface-wide
// deny), reading it as far as it can: commas are ignored (the usual
// mistake) and a string is a key only when a colon follows it. It only
// names what the person wrote; nothing is judged with it.
func salvageDenies(text string) []string {
	toks := jsonTokens(stripJSONComments(text))
	var out []string
	var stack []string // the key each open object or array was opened under
	key := ""          // the key whose value comes next
	for i, t := range toks {
		switch t {
		case "{":
			stack, key = append(stack, key), ""
		case "[":
			stack, key = append(stack, "\x00"), "" // nothing in an array is a rule
		case "}", "]":
			stack, key = stack[:max(len(stack)-1, 0)], ""
		case ":":
		default:
			s, ok := unquoteToken(t)
			switch {
			case ok && i+1 < len(toks) && toks[i+1] == ":":
				key = s
				continue
			case ok && s == "deny" && key != "" && len(stack) > 0:
				if d := denyAt(append(stack[1:len(stack):len(stack)], key)); d != "" && !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
			key = ""
		}
	}
	if len(out) > maxSalvaged {
		out = append(out[:maxSalvaged], "and "+strconv.Itoa(len(out)-maxSalvaged)+" more")
	}
	return out
}

// denyAt names the deny a "deny" at path writes, or "": permission.surface,
// permission.surface.pattern, or permission.surface.pattern.action.
func denyAt(path []string) string {
	if len(path) < 2 || path[0] != "permission" || strings.Contains(strings.Join(path, ""), "\x00") {
		return ""
	}
	surface := path[1]
	if surface == "" || strings.ContainsAny(surface, " \t\"") {
		surface = strconv.Quote(surface) // not a surface name: show where it starts and ends
	}
	switch {
	case len(path) == 2:
		return surface + ` "*"`
	case len(path) == 3, len(path) == 4 && path[3] == "action":
		return surface + " " + strconv.Quote(path[2])
	}
	return ""
}

// jsonTokens splits text into punctuation, quoted strings (raw, with their
// quotes) and bare words, dropping white space and commas.
func jsonTokens(text string) []string {
	var toks []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case strings.IndexByte("{}[]:", c) >= 0:
			toks = append(toks, text[i:i+1])
			i++
		case c == '"' || c == '\'':
			j := quotedEnd(text, i)
			toks = append(toks, text[i:j])
			i = j
		default:
			j := i
			for j < len(text) && strings.IndexByte(" \t\n\r,{}[]:\"'", text[j]) < 0 {
				j++
			}
			toks = append(toks, text[i:j])
			i = j
		}
	}
	return toks
}

// unquoteToken is a string token's text; ok is false for a bare word.
func unquoteToken(t string) (string, bool) {
	if t[0] != '"' && t[0] != '\'' {
		return "", false
	}
	if s, err := strconv.Unquote(t); err == nil && t[0] == '"' {
		return s, true
	}
	return strings.TrimSuffix(t[1:], t[:1]), true
}
