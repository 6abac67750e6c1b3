package main

// fastEcho answers a tools/call request on the --echo-fast path, whatever
// the tool name: {"content":[{"type":"text","text":"ok"}],
// "structuredContent":ARGS}, where ARGS are the raw request arguments ({}
// when absent or not an object). It allocates nothing in the steady state.
// It reports false, leaving the line to the normal path, for anything that
// is not a well-formed tools/call request with an id.
func (s *server) fastEcho(line []byte) bool {
	var id, method, params []byte
	ok := scanObject(line, func(key, val []byte) bool {
		switch string(key) {
		case "id":
			id = val
		case "method":
			method = val
		case "params":
			params = val
		}
		return true
	})
	if !ok || id == nil || string(method) != `"tools/call"` {
		return false
	}
	args := []byte("{}")
	if params != nil {
		if !scanObject(params, func(key, val []byte) bool {
			if string(key) == "arguments" && len(val) > 0 && val[0] == '{' {
				args = val
			}
			return true
		}) {
			return false
		}
	}
	b := s.fastBuf[:0]
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[{"type":"text","text":`...)
	if s.fastText == nil {
		b = append(b, `"ok"`...)
	} else {
		b = append(b, s.fastText...)
	}
	b = append(b, `}],"structuredContent":`...)
	b = append(b, args...)
	b = append(b, "}}\n"...)
	s.fastBuf = b
	s.write(b)
	return true
}

// scanObject calls fn with the raw key text (between the quotes, escapes
// not decoded) and the raw value of each member of the JSON object in b,
// stopping early when fn returns false. It reports whether b is a
// syntactically plausible object; it checks structure (quotes, brackets,
// commas, colons), not every detail of JSON numbers and literals. It never
// panics, whatever b holds.
func scanObject(b []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		kend := skipString(b, i)
		if kend < 0 {
			return false
		}
		key := b[i+1 : kend-1]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		vend := skipValue(b, i)
		if vend < 0 {
			return false
		}
		if !fn(key, b[i:vend]) {
			return true
		}
		i = skipSpace(b, vend)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] (a
// quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var stack []byte // only for nesting deeper than the fixed array
		var fixed [32]byte
		stack = fixed[:0]
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := skipString(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				stack = append(stack, b[j])
			case '}', ']':
				want := byte('{')
				if b[j] == ']' {
					want = '['
				}
				if len(stack) == 0 || stack[len(stack)-1] != want {
					return -1
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && !isDelim(b[j]) {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
