package main

import (
	"context"
	"flag"
	"log/slog"
)

// monitoringFlags is a monitoring command: it prints what generate makes
// from the metric definitions (worker/monitoring) and reads nothing else,
// so it runs without a configuration or a database, e.g. in the build that
// deploys the rules.
func monitoringFlags(generate func() ([]byte, error)) func(*flag.FlagSet, stdio) func() (runFunc, error) {
	return func(_ *flag.FlagSet, std stdio) func() (runFunc, error) {
		return func() (runFunc, error) {
			return func(context.Context, config, *slog.Logger) error {
				b, err := generate()
				if err != nil {
					return err
				}
				_, err = std.out.Write(b)
				return err
			}, nil
		}
	}
}
