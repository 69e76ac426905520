package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Stdio is what a command reads and prints; logs go to stderr.
type Stdio struct {
	In  io.Reader
	Out io.Writer
}

// Command is one command of hookline, a line of the table main.go holds.
// Its flags and its body live in the package it runs: this one for the
// servers and the database commands, web/demo, worker/bench.
type Command struct {
	Name     string // as typed: "serve", "user add"
	Synopsis string // its flags, for the usage line
	Summary  string
	NoConfig bool // runs without reading the configuration (version)
	Flags    Flags
}

// Flags declares a command's flags on fs and returns the check that runs
// once they are parsed: it rejects bad values (its error is a usage error)
// and returns what the command does. It never starts anything.
type Flags func(fs *flag.FlagSet, std Stdio) func() (Run, error)

// Run runs a command whose flags and configuration are valid.
type Run func(ctx context.Context, cfg Config, log *slog.Logger) error

// Table is every command hookline has, in the order help lists them.
type Table []Command

// Action is a parsed command line: what to run, nil when help was printed.
type Action struct {
	Run      Run
	NoConfig bool
}

// UsageError is a command line hookline does not accept; the process
// exits with status 2 and starts nothing.
type UsageError struct {
	msg   string
	usage string // the usage line of the command concerned
	help  string // how to get more help
}

func (e *UsageError) Error() string {
	return e.msg + "\n" + e.usage + "\n" + e.help
}

// NoFlags is a command without flags that runs fn.
func NoFlags(fn Run) Flags {
	return func(*flag.FlagSet, Stdio) func() (Run, error) {
		return func() (Run, error) { return fn, nil }
	}
}

// Print is a command without flags that prints what generate makes and
// reads nothing else (version, and the monitoring commands, which print
// what worker/monitoring makes from the metric definitions): with NoConfig
// it runs without a configuration or a database, e.g. in the build that
// deploys the alert rules.
func Print(generate func() ([]byte, error)) Flags {
	return func(_ *flag.FlagSet, std Stdio) func() (Run, error) {
		return func() (Run, error) {
			return func(context.Context, Config, *slog.Logger) error {
				b, err := generate()
				if err != nil {
					return err
				}
				_, err = std.Out.Write(b)
				return err
			}, nil
		}
	}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// Parse finds the command named by args and parses its flags. Help
// (hookline help [command], -h, --help, COMMAND --help) is printed to
// std.Out and yields an empty Action. A command line hookline does not
// accept is a *UsageError.
func (t Table) Parse(args []string, std Stdio) (Action, error) {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	switch {
	case isHelp(args[0]):
		if len(args) == 1 || isHelp(args[1]) {
			_, err := fmt.Fprint(std.Out, t.usage())
			return Action{}, err
		}
		// "hookline help user add" is "hookline user add --help".
		return t.Parse(append(append([]string{}, args[1:]...), "--help"), std)
	case args[0] == "-version" || args[0] == "--version":
		args = append([]string{"version"}, args[1:]...)
	case strings.HasPrefix(args[0], "-"):
		return Action{}, &UsageError{msg: fmt.Sprintf("unknown flag %s", args[0]), usage: "usage: hookline [command] [flags]", help: `run "hookline --help" for the commands`}
	}
	name, rest := args[0], args[1:]
	if subs := t.subcommands(name); len(subs) > 0 {
		group := &UsageError{usage: "usage: hookline " + name + " " + strings.Join(subs, "|") + " [flags]", help: `run "hookline ` + name + ` --help" for details`}
		switch {
		case len(rest) == 0:
			group.msg = name + ": missing command (" + strings.Join(subs, ", ") + ")"
			return Action{}, group
		case isHelp(rest[0]):
			_, err := fmt.Fprint(std.Out, t.groupUsage(name))
			return Action{}, err
		}
		name, rest = name+" "+rest[0], rest[1:]
		if t.Find(name) == nil {
			group.msg = fmt.Sprintf("unknown command %q", name)
			return Action{}, group
		}
	}
	c := t.Find(name)
	if c == nil {
		return Action{}, &UsageError{msg: fmt.Sprintf("unknown command %q", name), usage: "usage: hookline [command] [flags]", help: `run "hookline --help" for the commands`}
	}
	fs := flag.NewFlagSet("hookline "+c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed to stdout below
	check := c.Flags(fs, std)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(std.Out)
			_, err := fmt.Fprint(std.Out, c.usage(fs))
			return Action{}, err
		}
		return Action{}, c.usageError(err.Error())
	}
	if fs.NArg() > 0 {
		return Action{}, c.usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	fn, err := check()
	if err != nil {
		return Action{}, c.usageError(err.Error())
	}
	return Action{Run: fn, NoConfig: c.NoConfig}, nil
}

// Find is the command named name ("user add"), nil if there is none.
func (t Table) Find(name string) *Command {
	for i := range t {
		if t[i].Name == name {
			return &t[i]
		}
	}
	return nil
}

// subcommands lists the commands under a group such as "db" (url, start, stop).
func (t Table) subcommands(group string) []string {
	var subs []string
	for _, c := range t {
		if g, sub, ok := strings.Cut(c.Name, " "); ok && g == group {
			subs = append(subs, sub)
		}
	}
	return subs
}

func (c *Command) usageLine() string {
	return strings.TrimSpace("usage: hookline " + c.Name + " " + c.Synopsis)
}

func (c *Command) usageError(msg string) error {
	return &UsageError{msg: c.Name + ": " + msg, usage: c.usageLine(), help: `run "hookline ` + c.Name + ` --help" for details`}
}

// usage is "hookline COMMAND --help": the usage line, the summary and the flags.
func (c *Command) usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s.\n", c.usageLine(), upperFirst(c.Summary))
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nflags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	if !c.NoConfig {
		b.WriteString("\nConfiguration comes from environment variables (see README).\n")
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// usage is "hookline --help".
func (t Table) usage() string {
	var b strings.Builder
	b.WriteString("usage: hookline [command] [flags]\n\ncommands:\n")
	for _, c := range t {
		writeCommandLine(&b, strings.TrimSpace(c.Name+" "+c.Synopsis), c.Summary)
	}
	writeCommandLine(&b, "help [command]", "print this, or a command's usage and flags")
	b.WriteString("\nWithout a command, hookline serves. \"hookline COMMAND --help\" shows a command's\nflags. Configuration comes from environment variables (see README).\n")
	return b.String()
}

func (t Table) groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: hookline %s %s [flags]\n\ncommands:\n", group, strings.Join(t.subcommands(group), "|"))
	for _, c := range t {
		if g, _, _ := strings.Cut(c.Name, " "); g == group && strings.Contains(c.Name, " ") {
			writeCommandLine(&b, strings.TrimSpace(c.Name+" "+c.Synopsis), c.Summary)
		}
	}
	return b.String()
}

func writeCommandLine(b *strings.Builder, left, summary string) {
	const col = 24
	if len(left) < col-1 {
		fmt.Fprintf(b, "  %-*s%s\n", col, left, summary)
		return
	}
	fmt.Fprintf(b, "  %s\n  %-*s%s\n", left, col, "", summary)
}
