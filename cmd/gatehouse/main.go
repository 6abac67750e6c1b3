// Command gatehouse is a security gateway for the Model Context Protocol.
// See the README for the commands, flags and exit codes.
package main

import (
	"os"

	"github.com/gatehouse-mcp/gatehouse/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
