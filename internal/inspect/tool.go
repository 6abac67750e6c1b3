package inspect

import (
	"github.com/gatehouse-mcp/gatehouse/internal/scan"
)

// InspectTool scans one tool definition of a tools/list result (MCP
// "Tool": name, title, description, annotations.title, inputSchema,
// outputSchema) with scan.ModeToolDefinition, for poisoning and secrets.
// In inputSchema and outputSchema it scans, recursively through
// properties, patternProperties, items, prefixItems,
// additionalProperties, anyOf, oneOf, allOf, not, $defs and definitions,
// every property name and every title and description string. Paths point
// into tool: "/description", "/inputSchema/properties/sidenote" (a
// property name: the member) or
// "/inputSchema/properties/sidenote/description". Other members are not
// scanned. The errors are Inspect's; tool must be an object.
func InspectTool(sc *scan.Scanner, tool []byte) (*Report, error) {
	opts := Options{Mode: scan.ModeToolDefinition}.withDefaults()
	r := &Report{opts: opts, size: len(tool), sum: checksum(tool), tool: true}
	w := getWalker(tool, opts)
	defer putWalker(w)
	r.attach(sc, w)
	if err := w.tool(); err != nil && err != errStop {
		return nil, err
	}
	r.Undecoded = w.undecoded
	return r, nil
}

// tool walks w.doc as a tool definition.
func (w *walker) tool() error {
	b := w.doc
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return &SyntaxError{Offset: i, What: "a tool must be an object"}
	}
	i, err := w.members(b, i, 1, func(name string, _, _, vi, depth int) (int, error) {
		switch name {
		case "name", "title", "description":
			return w.stringOrSkip(b, vi, depth, name)
		case "annotations":
			if b[vi] != '{' {
				return w.skip(b, vi, depth)
			}
			return w.members(b, vi, depth+1, func(name string, _, _, vi, depth int) (int, error) {
				if name == "title" {
					return w.stringOrSkip(b, vi, depth, name)
				}
				return w.skip(b, vi, depth)
			})
		case "inputSchema", "outputSchema":
			return w.schema(b, vi, depth)
		}
		return w.skip(b, vi, depth)
	})
	if err != nil {
		return err
	}
	if i = skipSpace(b, i); i != len(b) {
		return &SyntaxError{Offset: i, What: "data after the value"}
	}
	return nil
}

// schema walks the JSON Schema at b[i] (an object; a boolean schema is
// skipped).
func (w *walker) schema(b []byte, i, depth int) (int, error) {
	if b[i] != '{' {
		return w.skip(b, i, depth)
	}
	return w.members(b, i, depth+1, func(name string, _, _, vi, depth int) (int, error) {
		switch name {
		case "title", "description":
			return w.stringOrSkip(b, vi, depth, name)
		case "properties", "patternProperties", "$defs", "definitions":
			if b[vi] != '{' {
				return w.skip(b, vi, depth)
			}
			scanNames := name == "properties"
			return w.members(b, vi, depth+1, func(pname string, ns, ne, vi, depth int) (int, error) {
				if scanNames {
					if err := w.scanName(b, ns, ne, pname); err != nil {
						return vi, err
					}
				}
				return w.schema(b, vi, depth)
			})
		case "items", "prefixItems", "anyOf", "oneOf", "allOf":
			if b[vi] == '[' {
				return w.elements(b, vi, depth+1, func(vi, depth int) (int, error) {
					return w.schema(b, vi, depth)
				})
			}
			return w.schema(b, vi, depth)
		case "additionalProperties", "not":
			return w.schema(b, vi, depth)
		}
		return w.skip(b, vi, depth)
	})
}

// stringOrSkip scans the string at b[i] held by key; another value is
// skipped.
func (w *walker) stringOrSkip(b []byte, i, depth int, key string) (int, error) {
	if b[i] != '"' {
		return w.skip(b, i, depth)
	}
	return w.value(b, i, depth, key)
}

// skip checks and skips the value at b[i].
func (w *walker) skip(b []byte, i, depth int) (int, error) {
	if err := w.checkDepth(depth); err != nil {
		return i, err
	}
	n, ok := skipValue(b, i, w.opts.MaxDepth-depth)
	if !ok {
		// Walk it without visiting for the precise error.
		visit := w.visit
		w.visit = nil
		_, err := w.value(b, i, depth, "")
		w.visit = visit
		if err != nil {
			return i, err
		}
		return i, &SyntaxError{Offset: i, What: "invalid value"}
	}
	return n, nil
}

// members calls fn for each member of the object at b[i] with the
// member's decoded name, its name's content offsets and its value's
// offset, the path extended by the name; fn returns the offset after the
// value.
func (w *walker) members(b []byte, i, depth int, fn func(name string, ns, ne, vi, depth int) (int, error)) (int, error) {
	if err := w.checkDepth(depth); err != nil {
		return i, err
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, &SyntaxError{Offset: i, What: "member name expected"}
		}
		ns, ne, next, esc, err := stringToken(b, i)
		if err != nil {
			return i, err
		}
		name, err := w.name(b[ns:ne], esc)
		if err != nil {
			return i, offsetErr(err, ns)
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return i, &SyntaxError{Offset: i, What: "':' expected"}
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return i, &SyntaxError{Offset: i, What: "unexpected end"}
		}
		w.push(seg{name: name, idx: -1})
		i, err = fn(name, ns, ne, i, depth)
		w.pop()
		if err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return i, &SyntaxError{Offset: i, What: "',' or '}' expected"}
	}
}

// elements calls fn for each element of the array at b[i], the path
// extended by its index.
func (w *walker) elements(b []byte, i, depth int, fn func(vi, depth int) (int, error)) (int, error) {
	if err := w.checkDepth(depth); err != nil {
		return i, err
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		if i >= len(b) {
			return i, &SyntaxError{Offset: i, What: "unexpected end"}
		}
		w.push(seg{idx: n})
		var err error
		i, err = fn(i, depth)
		w.pop()
		if err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, &SyntaxError{Offset: i, What: "',' or ']' expected"}
	}
}
