package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/web/account"
)

// The commands that act on the database and leave: migrate, apikey
// create, user add, and the db commands of the embedded cluster.

// MigrateFlags is migrate: it opens the database, which applies the
// migrations, and says so.
func MigrateFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	return func() (Run, error) {
		return func(ctx context.Context, cfg Config, log *slog.Logger) error {
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				fmt.Fprintln(std.Out, "migrations applied")
				return nil
			})
		}, nil
	}
}

// APIKeyCreateFlags is apikey create: the key is the last line printed.
func APIKeyCreateFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	name := fs.String("name", "", "a name that says who uses the key (required)")
	scope := fs.String("scope", account.ScopeAdmin, "ingest (post events, read back its own), read (every GET) or admin (everything)")
	partner := fs.Int64("partner", 0, "bind an ingest or read key to the partner with this id")
	return func() (Run, error) {
		if strings.TrimSpace(*name) == "" {
			return nil, errors.New("--name is required")
		}
		if !account.ValidScope(*scope) {
			return nil, fmt.Errorf("--scope %q: want ingest, read or admin", *scope)
		}
		spec := account.APIKeySpec{Name: *name, Scope: *scope, CreatedBy: "cli"}
		partnerSet := false
		fs.Visit(func(f *flag.Flag) { partnerSet = partnerSet || f.Name == "partner" })
		if partnerSet {
			switch {
			case *partner <= 0:
				return nil, fmt.Errorf("--partner %d: want a partner id (a positive integer)", *partner)
			case *scope == account.ScopeAdmin:
				return nil, errors.New("--partner goes with --scope ingest or read: an admin key acts on every partner")
			}
			spec.PartnerID = partner
		}
		return func(ctx context.Context, cfg Config, log *slog.Logger) error {
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				key, row, err := account.CreateScopedAPIKey(ctx, pool, spec)
				var fe *account.FieldError
				if errors.As(err, &fe) {
					return fmt.Errorf("--%s: %s", fe.Field, fe.Message)
				}
				if err != nil {
					return err
				}
				bound := ""
				if row.PartnerID != nil {
					bound = fmt.Sprintf(", bound to partner %d", *row.PartnerID)
				}
				fmt.Fprintf(std.Out, "created API key %q (prefix %s, scope %s%s); it is shown only once:\n%s\n", row.Name, row.Prefix, row.Scope, bound, key)
				return nil
			})
		}, nil
	}
}

// UserAddFlags is user add: a dashboard user with a password read from
// stdin or generated and printed once.
func UserAddFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	email := fs.String("email", "", "login email (required)")
	role := fs.String("role", account.RoleOperator, "admin, operator or viewer")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of stdin (otherwise one is generated and printed)")
	return func() (Run, error) {
		if strings.TrimSpace(*email) == "" {
			return nil, errors.New("--email is required")
		}
		addr, err := account.NormalizeEmail(*email)
		if err != nil {
			return nil, fmt.Errorf("--email %q is not a valid email address", *email)
		}
		if !account.ValidRole(*role) {
			return nil, fmt.Errorf("--role %q: want admin, operator or viewer", *role)
		}
		return func(ctx context.Context, cfg Config, log *slog.Logger) error {
			password := ""
			if *fromStdin {
				line, err := bufio.NewReader(std.In).ReadString('\n')
				if err != nil && !errors.Is(err, io.EOF) {
					return fmt.Errorf("read password: %w", err)
				}
				password = strings.TrimRight(line, "\r\n")
				if n := len(password); n < account.MinPasswordLen || n > 72 {
					return fmt.Errorf("password from stdin: want %d to 72 bytes, got %d", account.MinPasswordLen, n)
				}
			}
			return withDatabase(ctx, cfg, log, func(ctx context.Context, pool *pgxpool.Pool) error {
				u, generated, err := account.AddUser(ctx, pool, addr, *role, password)
				if err != nil {
					return err
				}
				fmt.Fprintf(std.Out, "added %s (%s)\n", u.Email, u.Role)
				if generated != "" {
					fmt.Fprintf(std.Out, "password (shown only once): %s\n", generated)
				}
				return nil
			})
		}, nil
	}
}

// The db commands manage the embedded cluster alone: "url" prints a
// connection string (psql "$(hookline db url)"), "start" starts it and
// returns, "stop" stops it whoever started it.

func errNotEmbedded(cmd string) error {
	return fmt.Errorf("%s: DATABASE_URL is set; this command manages the embedded database only", cmd)
}

// embeddedOnly is the flags check of a db command: it runs fn, refusing a
// configuration that names its own database.
func embeddedOnly(cmd string, fn Run) func() (Run, error) {
	return func() (Run, error) {
		return func(ctx context.Context, cfg Config, log *slog.Logger) error {
			if !cfg.Embedded() {
				return errNotEmbedded(cmd)
			}
			return fn(ctx, cfg, log)
		}, nil
	}
}

// DBURLFlags is db url.
func DBURLFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	return embeddedOnly("db url", func(ctx context.Context, cfg Config, log *slog.Logger) error {
		c, err := embedded.Attach(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		fmt.Fprintln(std.Out, c.URL())
		return nil
	})
}

// DBStartFlags is db start.
func DBStartFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	noFsync := fs.Bool("no-fsync", false, "start with fsync off (throwaway test clusters only)")
	return embeddedOnly("db start", func(ctx context.Context, cfg Config, log *slog.Logger) error {
		c, err := embedded.Start(ctx, embedded.Options{DataDir: cfg.DataDir, NoFsync: *noFsync, Logger: log})
		if err != nil {
			return err
		}
		fmt.Fprintln(std.Out, c.URL())
		return nil
	})
}

// DBStopFlags is db stop.
func DBStopFlags(fs *flag.FlagSet, std Stdio) func() (Run, error) {
	return embeddedOnly("db stop", func(ctx context.Context, cfg Config, log *slog.Logger) error {
		c, err := embedded.Attach(ctx, cfg.DataDir)
		if err != nil {
			return err
		}
		return c.ForceStop(ctx)
	})
}
