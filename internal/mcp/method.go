package mcp

import (
	"strings"
	"unicode"

	"github.com/gatehouse-mcp/gatehouse/internal/strictjson"
)

// NearMethod reports whether method is not exactly want but becomes it
// once white space, control and format characters (Unicode categories Zs,
// Cc, Cf: "tools/call ", "tools/call\u0000", "tools/\u200bcall") are
// dropped and case is folded as the gateway folds member names
// (strictjson.Fold, lower(upper(s))): "TOOLS/CALL", "Tools/Call". MCP
// method names are case-sensitive ASCII, so no real method is near
// another; a server that matches them loosely would read such a method
// as want, so the gateway refuses it rather than relaying a tools/call
// that no policy decided.
func NearMethod(method, want string) bool {
	if method == want {
		return false
	}
	cleaned := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, method)
	return strictjson.Fold(cleaned) == strictjson.Fold(want)
}
