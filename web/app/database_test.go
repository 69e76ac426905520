package app

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookline/hookline/db/dbtest"
)

// TestConnectPassesASilentHost: a host of a multi-host URL that accepts
// connections and never answers (a hung or unreachable machine) holds a
// connection for the default connect timeout, not the kernel's two
// minutes; the next host serves.
func TestConnectPassesASilentHost(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer func() { silent.Close(); <-done }()
	go func() {
		defer close(done)
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	real, err := pgconn.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(silent.Addr().String())
	url := fmt.Sprintf("host=127.0.0.1,%s port=%s,%d user=%s dbname=%s sslmode=disable", real.Host, port, real.Port, real.User, real.Database)
	cfg, err := poolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatalf("connect past a silent host: %v", err)
	}
	defer conn.Close(ctx)
	if took := time.Since(began); took < defaultConnectTimeout || took > defaultConnectTimeout+10*time.Second {
		t.Fatalf("connected in %s; want the silent host given up after %s", took, defaultConnectTimeout)
	}
}

func TestPoolConfig(t *testing.T) {
	cfg, err := poolConfig("postgres://u@db.invalid/h")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConns != defaultPoolConns {
		t.Errorf("max conns %d, want the default %d", cfg.MaxConns, defaultPoolConns)
	}
	// jit is set once connected (db.ConfigurePool), not as a startup
	// parameter, which a pooler such as PgBouncer refuses.
	if p := cfg.ConnConfig.RuntimeParams; p["application_name"] != "hookline" || p["jit"] != "" || cfg.ConnConfig.AfterConnect == nil {
		t.Errorf("runtime params %v, after connect set: %v", p, cfg.ConnConfig.AfterConnect != nil)
	}

	if cfg.ConnConfig.ConnectTimeout != defaultConnectTimeout {
		t.Errorf("connect timeout %s, want the default %s", cfg.ConnConfig.ConnectTimeout, defaultConnectTimeout)
	}
	if cfg, err := poolConfig("postgres://u@db.invalid/h?connect_timeout=2"); err != nil || cfg.ConnConfig.ConnectTimeout != 2*time.Second {
		t.Errorf("the URL's connect_timeout: %v", err)
	}

	// The URL's own pool size and session settings win.
	cfg, err = poolConfig("postgres://u@db.invalid/h?pool_max_conns=7&jit=on")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConns != 7 || cfg.ConnConfig.RuntimeParams["jit"] != "on" {
		t.Errorf("max conns %d, jit %q: want the URL's 7 and on", cfg.MaxConns, cfg.ConnConfig.RuntimeParams["jit"])
	}
	cfg, err = poolConfig("host=db.invalid user=u dbname=h pool_max_conns=3")
	if err != nil || cfg.MaxConns != 3 {
		t.Fatalf("keyword form: %v, %v", cfg, err)
	}

	// Only the setting counts, not its name elsewhere in the URL.
	cfg, err = poolConfig("postgres://u:pool_max_conns@db.invalid/pool_max_conns?application_name=pool_max_conns")
	if err != nil || cfg.MaxConns != defaultPoolConns {
		t.Fatalf("the name in a password and database: %v, %v", cfg, err)
	}

	if _, err := poolConfig("postgres://u@db.invalid/h?pool_max_conns=many"); err == nil {
		t.Error("a pool_max_conns that is not a number was accepted")
	}
}
