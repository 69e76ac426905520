package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db/dbtest"
)

// TestAPIKeyCreateScopes: apikey create stores the scope and partner it
// is given, admin when it is given none, and refuses a partner that does
// not exist or is archived by name, creating nothing.
func TestAPIKeyCreateScopes(t *testing.T) {
	t.Parallel()
	url := dbtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	env := map[string]string{
		"DATABASE_URL":         url,
		"HOOKLINE_SECRET_KEY":  "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
		"HOOKLINE_SESSION_KEY": "CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg=",
		"HOOKLINE_DATA_DIR":    emptyDataDir(t),
	}
	create := func(args string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, strings.Fields("apikey create "+args), func(k string) string { return env[k] }, strings.NewReader(""), &out, io.Discard)
		return out.String(), err
	}
	// The first command migrates the database.
	if _, err := create("--name producer --scope ingest"); err != nil {
		t.Fatal(err)
	}
	var active, archived int64
	if err := pool.QueryRow(ctx, `INSERT INTO partners (name) VALUES ('Acme') RETURNING id`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO partners (name, archived_at) VALUES ('Gone', now()) RETURNING id`).Scan(&archived); err != nil {
		t.Fatal(err)
	}
	out, err := create(fmt.Sprintf("--name acme-reader --scope read --partner %d", active))
	if err != nil || !strings.Contains(out, fmt.Sprintf("scope read, bound to partner %d", active)) {
		t.Fatalf("bound key: %v\n%s", err, out)
	}
	if _, err := create("--name ops"); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT name || ' ' || scope || ' ' || coalesce(partner_id::text, '-') FROM api_keys ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	want := []string{"producer ingest -", fmt.Sprintf("acme-reader read %d", active), "ops admin -"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for args, msg := range map[string]string{
		"--name x --scope ingest --partner 424242":                  "--partner: no partner with id 424242",
		fmt.Sprintf("--name x --scope read --partner %d", archived): fmt.Sprintf("--partner: partner %d (Gone) is archived", archived),
	} {
		if _, err := create(args); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", args, err, msg)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_keys`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d keys, %v; want 3", n, err)
	}
}
