package main

// location is one place of an MCP message the gateway scans; build
// returns the JSON value scanned there with leaf (a JSON string token)
// planted under key ("" for the location's default), and the RFC 6901
// pointer of the leaf.
type location struct {
	name  string
	keyed bool   // the leaf sits under a member name the generator chooses
	mode  string // "data" or "tool_definition"
	build func(g *gen, leaf, key string) (doc, path string)
}

func orKey(key, def string) string {
	if key == "" {
		return def
	}
	return key
}

var dataLocations = []location{
	{"call-arguments", true, "data", func(g *gen, leaf, key string) (string, string) {
		key = orKey(key, "content")
		return `{"path":"/srv/app/` + g.pick("notes.txt", "README.md", "deploy.yaml") + `",` + js(key) + `:` + leaf + `}`, "/" + ptr(key)
	}},
	{"result-text", false, "data", func(g *gen, leaf, _ string) (string, string) {
		if g.r.IntN(2) == 0 {
			return `{"content":[{"type":"text","text":` + leaf + `}],"isError":false}`, "/content/0/text"
		}
		return `{"content":[{"type":"text","text":"Command finished with exit code 0."},{"type":"text","text":` + leaf + `}]}`, "/content/1/text"
	}},
	{"embedded-resource", false, "data", func(g *gen, leaf, _ string) (string, string) {
		return `{"content":[{"type":"resource","resource":{"uri":"file:///srv/app/` + g.pick("config/settings.txt", "logs/app.log", "docs/page.md") + `","mimeType":"text/plain","text":` + leaf + `}}]}`, "/content/0/resource/text"
	}},
	{"resource-blob", false, "data", func(g *gen, leaf, _ string) (string, string) {
		return `{"content":[{"type":"resource","resource":{"uri":"file:///srv/app/` + g.pick(".env", "export.txt", "page.md") + `","mimeType":"` + g.pick("text/plain", "text/markdown") + `","blob":` + leaf + `}}]}`, "/content/0/resource/blob"
	}},
	{"structured-content", true, "data", func(g *gen, leaf, key string) (string, string) {
		key = orKey(key, "summary")
		return `{"content":[{"type":"text","text":"Query returned 1 row."}],"structuredContent":{"id":` + g.str("123456789", 4) + `,` + js(key) + `:` + leaf + `}}`, "/structuredContent/" + ptr(key)
	}},
	{"structured-and-text", true, "data", func(g *gen, leaf, key string) (string, string) {
		// A tool returning structuredContent also returns it serialized
		// in a TextContent block (MCP 2025-06-18, tools, "Structured
		// Content"): the same value twice, to be redacted in both.
		key = orKey(key, "summary")
		obj := `{"id":` + g.str("123456789", 4) + `,` + js(key) + `:` + leaf + `}`
		return `{"content":[{"type":"text","text":` + js(obj) + `}],"structuredContent":` + obj + `}`, "/structuredContent/" + ptr(key)
	}},
	{"error-message", false, "data", func(_ *gen, leaf, _ string) (string, string) {
		return `{"code":-32603,"message":` + leaf + `}`, "/message"
	}},
	{"error-data", true, "data", func(_ *gen, leaf, key string) (string, string) {
		key = orKey(key, "detail")
		return `{"code":-32000,"message":"Upstream request failed","data":{"status":502,` + js(key) + `:` + leaf + `}}`, "/data/" + ptr(key)
	}},
	{"progress", false, "data", func(g *gen, leaf, _ string) (string, string) {
		return `{"progressToken":"op-` + g.str(digits, 3) + `","progress":40,"total":100,"message":` + leaf + `}`, "/message"
	}},
	{"log-message", true, "data", func(g *gen, leaf, key string) (string, string) {
		key = orKey(key, "message")
		return `{"level":"` + g.pick("info", "warning", "error", "debug") + `","logger":"` + g.pick("db.pool", "http", "worker") + `","data":{` + js(key) + `:` + leaf + `}}`, "/data/" + ptr(key)
	}},
	{"sampling-request", false, "data", func(_ *gen, leaf, _ string) (string, string) {
		return `{"messages":[{"role":"user","content":{"type":"text","text":` + leaf + `}}],"systemPrompt":"You are a helpful assistant.","maxTokens":400}`, "/messages/0/content/text"
	}},
	{"elicitation-message", false, "data", func(_ *gen, leaf, _ string) (string, string) {
		return `{"message":` + leaf + `,"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`, "/message"
	}},
	{"elicitation-schema", false, "data", func(_ *gen, leaf, _ string) (string, string) {
		return `{"message":"Please confirm the deployment settings.","requestedSchema":{"type":"object","properties":{"region":{"type":"string","description":` + leaf + `}}}}`, "/requestedSchema/properties/region/description"
	}},
	{"sampling-response", false, "data", func(_ *gen, leaf, _ string) (string, string) {
		return `{"role":"assistant","content":{"type":"text","text":` + leaf + `},"model":"example-model-1","stopReason":"endTurn"}`, "/content/text"
	}},
	{"elicitation-response", true, "data", func(_ *gen, leaf, key string) (string, string) {
		key = orKey(key, "comment")
		return `{"action":"accept","content":{` + js(key) + `:` + leaf + `}}`, "/content/" + ptr(key)
	}},
}

const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

var toolLocations = []location{
	{"tool-description", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
		return `{"name":"` + g.toolName() + `","description":` + leaf + `,"inputSchema":` + addSchema + `}`, "/description"
	}},
	{"tool-title", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
		return `{"name":"` + g.toolName() + `","title":` + leaf + `,"description":"Adds two numbers.","inputSchema":` + addSchema + `}`, "/title"
	}},
	{"tool-property-description", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
		p := g.pick("sidenote", "context", "notes", "metadata")
		return `{"name":"` + g.toolName() + `","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"` + p + `":{"type":"string","description":` + leaf + `}},"required":["a","b"]}}`, "/inputSchema/properties/" + p + "/description"
	}},
	{"tool-output-schema", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
		return `{"name":"` + g.toolName() + `","description":"Returns the forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}}},"outputSchema":{"type":"object","properties":{"forecast":{"type":"string","description":` + leaf + `}}}}`, "/outputSchema/properties/forecast/description"
	}},
}

// toolPropertyName plants leaf as a property name of the input schema.
var toolPropertyName = location{"tool-property-name", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
	return `{"name":"` + g.toolName() + `","description":"Adds two numbers.","inputSchema":{"type":"object","properties":{"a":{"type":"number"},` + leaf + `:{"type":"string"}}}}`, ""
}}

// toolNameLoc plants leaf as the tool's name.
var toolNameLoc = location{"tool-name", false, "tool_definition", func(g *gen, leaf, _ string) (string, string) {
	return `{"name":` + leaf + `,"description":"` + g.pick("Reads a file from the workspace.", "Sends a message.", "Runs the requested operation.") + `","inputSchema":{"type":"object","properties":{"target":{"type":"string"}}}}`, "/name"
}}

func (g *gen) toolName() string {
	return g.pick("add", "get_weather", "format_markdown", "daily_quote", "unit_convert", "summarize_text")
}
