package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker"
	"github.com/hookline/hookline/worker/ssrf"
)

// ownerDatabase makes a role that owns one database and nothing else, as
// managed PostgreSQL hands out (no superuser, no CREATEDB, no CREATEROLE),
// and its empty database; both are dropped at the end of the test. It
// returns the role's connection string.
func ownerDatabase(t *testing.T) string {
	t.Helper()
	admin := dbtest.AdminURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("hookline_owner_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	password := "owner-password-of-the-test"
	for _, sql := range []string{
		"CREATE ROLE " + name + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '" + password + "'",
		"CREATE DATABASE " + name + " OWNER " + name + " TEMPLATE template0",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
	})
	cfg, err := pgconn.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", cfg.Host, cfg.Port, name, password, name)
}

// TestNonSuperuserOwner: a role that only owns its database migrates it
// (hookline migrate), serves and delivers, and the worker keeps its
// partitions (made ahead, dropped past their retention): nothing hookline
// does needs a superuser.
func TestNonSuperuserOwner(t *testing.T) {
	t.Parallel()
	url := ownerDatabase(t)
	env := serveEnv(t, url)
	command(t, env, "", "migrate")
	p := start(t, env, "serve")
	deliversThrough(t, env, p, 20)
	p.stop()

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var super, createdb bool
	if err := pool.QueryRow(ctx, "SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&super, &createdb); err != nil || super || createdb {
		t.Fatalf("the role is superuser %v, createdb %v (%v)", super, createdb, err)
	}
	// A retention pass three weeks on: the attempts', delivered
	// deliveries' and events' partitions of today are past their
	// retention, and the coming days' are made.
	later := time.Now().Add(21 * 24 * time.Hour)
	var logs lockedBuffer
	w, err := worker.New(worker.Config{
		Pool:      pool,
		SecretKey: bytes.Repeat([]byte{7}, 32),
		Guard:     ssrf.New(nil),
		Now:       func() time.Time { return later },
		Retention: worker.DefaultRetention(),
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RetainNow(ctx); err != nil {
		t.Fatalf("retention pass as the owner: %v\n%s", err, logs.tail(1<<20))
	}
	if s := logs.tail(1 << 20); strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") || !strings.Contains(s, "retention dropped a partition") {
		t.Fatalf("retention pass as the owner:\n%s", s)
	}
	var ahead int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'delivery_attempts'::regclass AND pg_get_expr(c.relpartbound, c.oid) LIKE '%' || $1 || '%'`,
		later.UTC().Format("2006-01-02")).Scan(&ahead); err != nil || ahead != 1 {
		t.Fatalf("attempt partitions for %s: %d, %v", later.Format("2006-01-02"), ahead, err)
	}
}
