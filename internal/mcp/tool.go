package mcp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// A tool definition is what policy reads (annotations, the derived side
// effect) and what the catalog keys on (the name), so it is decoded
// strictly: a server, or a client, that reads the same bytes with a more
// lenient decoder must not read a different tool. encoding/json matches
// member names case-insensitively ("NAME" fills Name, "READONLYHINT"
// fills ReadOnlyHint) and lets the last duplicate win; these decoders match
// names exactly, refuse duplicates, refuse a name that differs from a known
// member only in case (under the folding lower(upper(name)), as
// jsonrpc.Parse folds frame members), and refuse a known member of the
// wrong type. Unknown members (icons, execution, later additions) are
// allowed and ignored.

// Sentinel errors wrapped by [ToolError] and [PageError]; callers branch on
// them with errors.Is.
var (
	// ErrToolMalformed: the definition is not one strict JSON object
	// (invalid JSON or UTF-8, text after the value, not an object).
	ErrToolMalformed = errors.New("not a strict JSON object")
	// ErrToolDuplicate: a member name occurs twice in one object, or two
	// names at any depth are equal under case folding.
	ErrToolDuplicate = errors.New("duplicate member name")
	// ErrToolNearMiss: a member name differs from a known member only in
	// case ("Annotations", "READONLYHINT"): a peer matching names
	// case-insensitively would read what the gateway did not.
	ErrToolNearMiss = errors.New("member name differs from a known member only in case")
	// ErrToolType: a known member has the wrong JSON type (null included:
	// an absent member is omitted, not null).
	ErrToolType = errors.New("wrong JSON type")
	// ErrToolNoName: the definition has no name member, or an empty one.
	ErrToolNoName = errors.New("missing or empty name")
)

// ToolError reports one tool definition refused by [ParseTool] or
// [ParseToolsPage]. It never holds a value from the definition (a name or
// description may carry anything): only where the definition was, how long
// its name was, and which known member was at fault.
type ToolError struct {
	// Index is the definition's 0-based position in the page's tools
	// array; -1 from ParseTool.
	Index int
	// NameBytes is the byte length of the definition's name when it was
	// read as a string, else -1.
	NameBytes int
	// Field names the member at fault as an RFC 6901 JSON Pointer relative
	// to the definition, spelt as the specification spells it
	// ("/annotations/readOnlyHint"); "" when the fault is the definition
	// as a whole or a member that is not a known one.
	Field string
	// Err is one of the ErrTool* sentinels.
	Err error
}

// Error says which definition, which field and what is wrong, without any
// value.
func (e *ToolError) Error() string {
	where := "tool"
	if e.Index >= 0 {
		where = fmt.Sprintf("tool %d", e.Index)
	}
	if e.NameBytes >= 0 {
		where += fmt.Sprintf(" (name of %d bytes)", e.NameBytes)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", where, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

// Unwrap returns the sentinel.
func (e *ToolError) Unwrap() error { return e.Err }

// ToolErrors is the error [ParseToolsPage] returns when some definitions
// of a page were refused and skipped: one *ToolError per skipped
// definition, in page order. errors.Is and errors.As look into each.
type ToolErrors []*ToolError

// Error counts the refused definitions and names the first.
func (e ToolErrors) Error() string {
	if len(e) == 1 {
		return "tools/list: 1 tool definition refused: " + e[0].Error()
	}
	return fmt.Sprintf("tools/list: %d tool definitions refused; first: %v", len(e), e[0])
}

// Unwrap returns the *ToolError values.
func (e ToolErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, t := range e {
		out[i] = t
	}
	return out
}

// PageError reports a tools/list result that cannot be read at all: it is
// not a strict JSON object, or its tools or nextCursor member is of the
// wrong type, duplicated or nearly (in case only) named. No tool of such a
// page is catalogued.
type PageError struct {
	// Field is "/tools" or "/nextCursor" when that member is at fault,
	// "" for the result as a whole.
	Field string
	// Err is one of the ErrTool* sentinels.
	Err error
}

// Error names the field and what is wrong.
func (e *PageError) Error() string {
	if e.Field == "" {
		return "tools/list result: " + e.Err.Error()
	}
	return "tools/list result: " + e.Field + ": " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *PageError) Unwrap() error { return e.Err }

// Member names of a Tool and of its Annotations ("Tools" page of revisions
// 2025-03-26 and later; title and outputSchema from 2025-06-18), and of a
// tools/list result.
var (
	toolMembers       = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}
	annotationMembers = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
	pageMembers       = []string{"tools", "nextCursor"}
	// toolNested are the known members of the tool's known objects, for
	// naming a fault inside one.
	toolNested = map[string][]string{"annotations": annotationMembers}
)

// nearMiss returns the known member that name equals under case folding
// without being it, or "".
func nearMiss(name string, known []string) string {
	f := strings.ToLower(strings.ToUpper(name))
	for _, k := range known {
		if name != k && f == strings.ToLower(k) {
			return k
		}
	}
	return ""
}

// fieldError is an error at a field of a definition: field is an RFC 6901
// pointer to a known member ("" when none), err a sentinel.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// at is the pointer of member n when it is one of known, else "".
func at(n string, known []string) string {
	for _, k := range known {
		if n == k {
			return "/" + k
		}
	}
	return ""
}

// members walks the members of the JSON object obj in order with
// strictjson.Members (the project's one strict reader), giving fn each name
// and raw value (a sub-slice of obj); the walk stops at fn's first error.
// It matches names exactly and refuses what strictjson refuses: a name
// that occurs twice or two names equal under case folding, at any depth
// (ErrToolDuplicate), a value that is not strict JSON or text after the
// object (ErrToolMalformed), and an obj that is not an object
// (ErrToolType). The error is a *fieldError naming the member at fault when
// it is one of known (and, with nested, the known member of the nested
// object below it: a duplicate readOnlyHint is "/annotations/readOnlyHint");
// fn's sentinel errors are wrapped likewise, its *fieldError kept as it is.
// A value is validated before fn sees it; the case-folding check, over the
// whole object, comes after the last member, so that fn's near-miss errors
// ("NAME" beside "name") name the member.
func members(obj []byte, known []string, nested map[string][]string, fn func(name string, v []byte) error) error {
	err := strictjson.Members(obj, func(name string, v []byte) error {
		if err := fn(name, v); err != nil {
			if fe, ok := err.(*fieldError); ok {
				return fe
			}
			return &fieldError{field: at(name, known), err: err}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if fe, ok := err.(*fieldError); ok {
		return fe
	}
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return &fieldError{err: ErrToolMalformed}
	}
	sentinel := ErrToolMalformed
	switch {
	case errors.Is(err, strictjson.ErrDuplicate), errors.Is(err, strictjson.ErrFoldedDuplicate):
		sentinel = ErrToolDuplicate
	case errors.Is(err, strictjson.ErrKind):
		sentinel = ErrToolType
	}
	return &fieldError{field: pointerField(se.Pointer, known, nested), err: sentinel}
}

// pointerField maps the RFC 6901 pointer of a strictjson error within a
// definition to the known member it lies in ("" when none): "/" + the
// first token when it is one of known, followed by "/" + the second when
// nested lists it as a known member of that one.
func pointerField(ptr string, known []string, nested map[string][]string) string {
	if ptr == "" {
		return ""
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	f := at(toks[0], known)
	if f != "" && len(toks) > 1 {
		if sub := at(toks[1], nested[toks[0]]); sub != "" {
			f += sub
		}
	}
	return f
}

// nearMissError is the error for member n when it differs from one of
// known only in case, else nil.
func nearMissError(n string, known []string) error {
	if k := nearMiss(n, known); k != "" {
		return &fieldError{field: "/" + k, err: ErrToolNearMiss}
	}
	return nil
}

// ParseTool decodes one tool definition strictly (see the package's
// comment above): raw must be one JSON object (RFC 8259) without duplicate
// member names at any depth (RFC 7493 §2.3), none equal under case folding;
// name must be a non-empty string; title and description strings;
// inputSchema, outputSchema, _meta and annotations objects; each
// annotation hint a boolean and annotations.title a string. Names are
// matched exactly (case-sensitively). Schemas and _meta are kept as raw
// JSON, as received.
//
// The error is a *ToolError (Index -1) wrapping ErrToolMalformed,
// ErrToolDuplicate, ErrToolNearMiss, ErrToolType or ErrToolNoName; it
// names the field at fault, never a value.
func ParseTool(raw []byte) (Tool, error) {
	var t Tool
	nameBytes := -1
	err := members(raw, toolMembers, toolNested, func(n string, v []byte) error {
		var err error
		switch n {
		case "name":
			if t.Name, err = stringValue(v); err == nil {
				nameBytes = len(t.Name)
			}
		case "title":
			t.Title, err = stringValue(v)
		case "description":
			t.Description, err = stringValue(v)
		case "inputSchema":
			t.InputSchema, err = objectValue(v)
		case "outputSchema":
			t.OutputSchema, err = objectValue(v)
		case "_meta":
			t.Meta, err = objectValue(v)
		case "annotations":
			t.Annotations, err = parseAnnotations(v)
			if fe, ok := err.(*fieldError); ok {
				return &fieldError{field: "/annotations" + fe.field, err: fe.err}
			}
		default:
			return nearMissError(n, toolMembers)
		}
		return err
	})
	if err == nil && t.Name == "" {
		err = &fieldError{field: "/name", err: ErrToolNoName}
	}
	if err != nil {
		fe := err.(*fieldError)
		return Tool{}, &ToolError{Index: -1, NameBytes: nameBytes, Field: fe.field, Err: fe.err}
	}
	return t, nil
}

// parseAnnotations decodes the annotations object v strictly. The error is
// a *fieldError with a pointer relative to the annotations object.
func parseAnnotations(v []byte) (Annotations, error) {
	var a Annotations
	err := members(v, annotationMembers, nil, func(n string, v []byte) error {
		var hint **bool
		switch n {
		case "title":
			var err error
			a.Title, err = stringValue(v)
			return err
		case "readOnlyHint":
			hint = &a.ReadOnlyHint
		case "destructiveHint":
			hint = &a.DestructiveHint
		case "idempotentHint":
			hint = &a.IdempotentHint
		case "openWorldHint":
			hint = &a.OpenWorldHint
		default:
			return nearMissError(n, annotationMembers)
		}
		b, err := boolValue(v)
		if err != nil {
			return err
		}
		*hint = &b
		return nil
	})
	if err != nil {
		return Annotations{}, err
	}
	return a, nil
}

// stringValue returns the JSON string v unquoted; ErrToolType for any
// other kind.
func stringValue(v []byte) (string, error) {
	if v[0] != '"' {
		return "", ErrToolType
	}
	s, err := strictjson.String(v)
	if err != nil {
		return "", ErrToolMalformed
	}
	return s, nil
}

// boolValue returns the JSON literal true or false v; ErrToolType for any
// other kind (null, a string "true", a number).
func boolValue(v []byte) (bool, error) {
	switch v[0] {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	}
	return false, ErrToolType
}

// objectValue returns a copy of the JSON object v as received;
// ErrToolType for any other kind.
func objectValue(v []byte) ([]byte, error) {
	if v[0] != '{' {
		return nil, ErrToolType
	}
	return append([]byte(nil), v...), nil
}

// ParseToolsPage decodes one tools/list result (a ListToolsResult, "Tools"
// page of each revision): its tools array, each definition with
// [ParseTool], and its nextCursor. result must be a strict JSON object
// with tools an array and nextCursor, when present, a string; member names
// are matched exactly, and a name that differs from tools or nextCursor only
// in case is refused. Other members (_meta, later additions) are ignored.
//
// nextCursor is the cursor's raw JSON string token, quotes included, as
// received; nil when the result has none (the last page).
//
// A definition that ParseTool refuses is skipped: tools holds the others in
// page order, and err is a [ToolErrors] with one *ToolError per skipped
// definition (its Index set). When the result itself cannot be read, tools
// and nextCursor are nil and err is a *PageError wrapping one of the
// ErrTool* sentinels. Either way err holds no value from the result.
func ParseToolsPage(result []byte) (tools []Tool, nextCursor []byte, err error) {
	var rawTools []byte
	err = members(result, pageMembers, nil, func(n string, v []byte) error {
		switch n {
		case "tools":
			if v[0] != '[' {
				return ErrToolType
			}
			rawTools = v
		case "nextCursor":
			if v[0] != '"' {
				return ErrToolType
			}
			nextCursor = append([]byte(nil), v...)
		default:
			return nearMissError(n, pageMembers)
		}
		return nil
	})
	if err != nil {
		fe := err.(*fieldError)
		return nil, nil, &PageError{Field: fe.field, Err: fe.err}
	}
	if rawTools == nil {
		return nil, nextCursor, nil
	}
	var skipped ToolErrors
	items, err := strictjson.Elements(rawTools) // validated by members
	if err != nil {
		return nil, nil, &PageError{Field: "/tools", Err: ErrToolMalformed}
	}
	for i, v := range items {
		t, err := ParseTool(v)
		if err != nil {
			te := err.(*ToolError)
			te.Index = i
			skipped = append(skipped, te)
			continue
		}
		tools = append(tools, t)
	}
	if skipped != nil {
		return tools, nextCursor, skipped
	}
	return tools, nextCursor, nil
}
