// Package dbtest gives tests a real PostgreSQL database: a fresh database per
// call, cloned from a template migrated to the current schema, dropped when
// the test ends.
//
// The server is TEST_DATABASE_URL when set; otherwise a private cluster from
// the local PostgreSQL installation, started on first use in
// $TMPDIR/hookline-test-<uid> with fsync off and left running for the next
// run ("make test" stops it at the end). In CI (CI=true) a missing database is
// a test failure, never a skip.
package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/db/migrations"
)

// ClusterDir is where the private test cluster lives when TEST_DATABASE_URL
// is unset.
func ClusterDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("hookline-test-%d", os.Getuid()))
}

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
)

// server returns the admin connection string of the test server.
func server() (string, error) {
	serverOnce.Do(func() {
		if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
			serverURL = u
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := embedded.Start(ctx, embedded.Options{DataDir: ClusterDir(), NoFsync: true})
		if err != nil {
			serverErr = fmt.Errorf("no TEST_DATABASE_URL and the private test cluster did not start: %w", err)
			return
		}
		serverURL = c.URLFor("postgres")
	})
	return serverURL, serverErr
}

// unavailable fails the test in CI and skips it elsewhere.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("database required in CI: %v", err)
	}
	t.Skipf("no database (%v); run make test or set TEST_DATABASE_URL", err)
}

// AdminURL is the connection string of the test server's superuser, for
// tests that set up what a database cannot: roles, databases of their own,
// a connection pooler in front of the server.
func AdminURL(t testing.TB) string {
	t.Helper()
	admin, err := server()
	if err != nil {
		unavailable(t, err)
	}
	return admin
}

// URL creates a fresh, migrated database for this test and returns its
// connection string. The database is dropped at the end of the test.
func URL(t testing.TB) string {
	t.Helper()
	return create(t, true)
}

// EmptyURL is URL without the migrations: a database with nothing in it,
// for tests of the migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return create(t, false)
}

func create(t testing.TB, migrated bool) string {
	t.Helper()
	admin, err := server()
	if err != nil {
		unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		unavailable(t, err)
	}
	defer conn.Close(context.Background())
	tmpl := "template0"
	if migrated {
		if tmpl, err = ensureTemplate(ctx, conn, admin); err != nil {
			t.Fatalf("prepare template database: %v", err)
		}
	}
	name := fmt.Sprintf("hookline_test_%d_%d", os.Getpid(), nextID())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(tmpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	})
	return withDatabase(admin, name)
}

// Pool returns a pool on a fresh database (see URL), closed at the end of
// the test.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var (
	idMu sync.Mutex
	id   int
)

func nextID() int {
	idMu.Lock()
	defer idMu.Unlock()
	id++
	return id
}

// ensureTemplate creates (once per schema version and UTC day) a database
// migrated to the current schema. The name carries a hash of the migration
// files, so a changed schema gets a new template, and the day: the
// migrations make the attempt log's day partitions from the day they run
// on, and tests read them as today's (a template from yesterday failed
// them after midnight). An advisory lock serialises test binaries racing
// to create it.
// templateLock is the advisory lock that serialises the test binaries'
// template builds and clean-ups on a cluster.
const templateLock = 72707369

func ensureTemplate(ctx context.Context, conn *pgx.Conn, admin string) (string, error) {
	sum, err := schemaHash()
	if err != nil {
		return "", err
	}
	today := time.Now().UTC()
	name := "hookline_template_" + sum + "_" + today.Format("20060102")
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	if err := dropStaleTemplates(ctx, conn, today); err != nil {
		return "", err
	}
	building := name + "_build"
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(building)+" WITH (FORCE)")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(building)); err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, withDatabase(admin, building))
	if err != nil {
		return "", err
	}
	err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return "", err
	}
	// Renamed only when complete, so a crash mid-migration leaves no
	// half-built template behind under the final name.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(building)+" RENAME TO "+ident(name)); err != nil {
		return "", err
	}
	return name, nil
}

// dropStaleTemplates drops the templates of days before yesterday.
// Yesterday's are kept (a test binary started before midnight may still
// be cloning one), and so are other schema versions' from today: the
// cluster is the user's, shared by every checkout, and a test binary of
// another tree (another branch, a clean clone) may be about to clone its
// own. A "_build" database found here is a crashed build's: builds hold
// the lock, and so must the caller.
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn, today time.Time) error {
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'hookline_template_%'")
	if err != nil {
		return err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, o := range old {
		if !strings.HasSuffix(o, today.Format("20060102")) && !strings.HasSuffix(o, today.AddDate(0, 0, -1).Format("20060102")) {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(o)+" WITH (FORCE)")
		}
	}
	return nil
}

func schemaHash() (string, error) {
	dir := migrationsDir()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// SQL files and Go migrations (and the code that registers them).
		if err == nil && (strings.HasSuffix(p, ".sql") || strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go")) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(filepath.Base(n)))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// migrationsDir finds db/migrations from the test's working directory (the
// package directory) by walking up to go.mod.
func migrationsDir() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "db", "migrations")
		}
	}
	return filepath.Join(dir, "db", "migrations")
}

// withDatabase swaps the database name in a URL or key=value connection string.
func withDatabase(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		u.RawPath = ""
		return u.String()
	}
	return dsn + " dbname=" + name
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }
