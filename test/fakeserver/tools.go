package main

// defaultTools is the tool set served when --tools is not given. Its
// annotations cover the three side-effect classes a policy distinguishes:
// read-only (echo), mutating (write: readOnlyHint false, destructiveHint
// false) and destructive by default (delete: no annotations).
const defaultTools = `[
 {"name":"echo","description":"Returns its arguments, as raw JSON text.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"write","description":"Pretends to write something.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":false}},
 {"name":"delete","description":"Pretends to delete something.","inputSchema":{"type":"object"}},
 {"name":"emit","description":"Writes arguments.lines verbatim to stdout.","inputSchema":{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}},"delay_ms":{"type":"integer"},"reply":{"type":"boolean"}},"required":["lines"]}},
 {"name":"sleep","description":"Sleeps arguments.ms milliseconds, with progress.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer"},"steps":{"type":"integer"}}}},
 {"name":"exit","description":"Exits the server process with arguments.code.","inputSchema":{"type":"object","properties":{"code":{"type":"integer"}}}},
 {"name":"sendlistchanged","description":"Switches to the second tool set and notifies.","inputSchema":{"type":"object"}}
]`

// defaultTools2 is the tool set served after sendlistchanged when --tools2
// is not given: the default set plus one tool.
const defaultTools2 = `[
 {"name":"echo","description":"Returns its arguments, as raw JSON text.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
 {"name":"write","description":"Pretends to write something.","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":false}},
 {"name":"delete","description":"Pretends to delete something.","inputSchema":{"type":"object"}},
 {"name":"emit","description":"Writes arguments.lines verbatim to stdout.","inputSchema":{"type":"object","properties":{"lines":{"type":"array","items":{"type":"string"}},"delay_ms":{"type":"integer"},"reply":{"type":"boolean"}},"required":["lines"]}},
 {"name":"sleep","description":"Sleeps arguments.ms milliseconds, with progress.","inputSchema":{"type":"object","properties":{"ms":{"type":"integer"},"steps":{"type":"integer"}}}},
 {"name":"exit","description":"Exits the server process with arguments.code.","inputSchema":{"type":"object","properties":{"code":{"type":"integer"}}}},
 {"name":"sendlistchanged","description":"Switches to the second tool set and notifies.","inputSchema":{"type":"object"}},
 {"name":"added","description":"Appears after sendlistchanged.","inputSchema":{"type":"object"}}
]`
