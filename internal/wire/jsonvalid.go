package wire

// validJSON reports whether data is exactly one JSON value (RFC 8259) with
// optional whitespace around it. The decoder is lenient (leading zeros, raw
// control characters in strings, text after the value), so every text is
// checked here first, as strictly as JSON.parse.
func validJSON(data []byte) bool {
	v := validator{data: data}
	v.space()
	if !v.value(0) {
		return false
	}
	v.space()
	return v.i == len(v.data)
}

// maxJSONDepth bounds nesting as encoding/json does.
const maxJSONDepth = 10000

type validator struct {
	data []byte
	i    int
}

func (v *validator) peek() byte {
	if v.i < len(v.data) {
		return v.data[v.i]
	}
	return 0
}

func (v *validator) space() {
	for v.i < len(v.data) {
		switch v.data[v.i] {
		case ' ', '\t', '\n', '\r':
			v.i++
		default:
			return
		}
	}
}

func (v *validator) literal(word string) bool {
	if len(v.data)-v.i < len(word) || string(v.data[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

func (v *validator) value(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	switch c := v.peek(); {
	case c == '{':
		return v.object(depth)
	case c == '[':
		return v.array(depth)
	case c == '"':
		return v.string()
	case c == 't':
		return v.literal("true")
	case c == 'f':
		return v.literal("false")
	case c == 'n':
		return v.literal("null")
	default:
		return v.number()
	}
}

func (v *validator) object(depth int) bool {
	v.i++ // {
	v.space()
	if v.peek() == '}' {
		v.i++
		return true
	}
	for {
		if v.peek() != '"' || !v.string() {
			return false
		}
		v.space()
		if v.peek() != ':' {
			return false
		}
		v.i++
		v.space()
		if !v.value(depth + 1) {
			return false
		}
		v.space()
		switch v.peek() {
		case ',':
			v.i++
			v.space()
		case '}':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) array(depth int) bool {
	v.i++ // [
	v.space()
	if v.peek() == ']' {
		v.i++
		return true
	}
	for {
		if !v.value(depth + 1) {
			return false
		}
		v.space()
		switch v.peek() {
		case ',':
			v.i++
			v.space()
		case ']':
			v.i++
			return true
		default:
			return false
		}
	}
}

func (v *validator) string() bool {
	v.i++ // "
	for v.i < len(v.data) {
		c := v.data[v.i]
		v.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			switch v.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.i++
			case 'u':
				v.i++
				for range 4 {
					if !isHex(v.peek()) {
						return false
					}
					v.i++
				}
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (v *validator) digits() bool {
	start := v.i
	for c := v.peek(); c >= '0' && c <= '9'; c = v.peek() {
		v.i++
	}
	return v.i > start
}

func (v *validator) number() bool {
	if v.peek() == '-' {
		v.i++
	}
	switch c := v.peek(); {
	case c == '0':
		v.i++
	case c >= '1' && c <= '9':
		v.digits()
	default:
		return false
	}
	if v.peek() == '.' {
		v.i++
		if !v.digits() {
			return false
		}
	}
	if c := v.peek(); c == 'e' || c == 'E' {
		v.i++
		if c := v.peek(); c == '+' || c == '-' {
			v.i++
		}
		if !v.digits() {
			return false
		}
	}
	return true
}
