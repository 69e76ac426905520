package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/embedded"
	"github.com/hookline/hookline/db/migrations"
	"github.com/hookline/hookline/db/replica"
	"github.com/hookline/hookline/db/secretbox"
)

// resolveKeys fills keys missing from the environment with ones generated
// once into the data directory (mode 0600), so a restart keeps decrypting
// stored secrets and keeps users logged in.
func resolveKeys(cfg *Config) error {
	for _, k := range []struct {
		dst  *[]byte
		file string
	}{{&cfg.SecretKey, "secret.key"}, {&cfg.SessionKey, "session.key"}} {
		if *k.dst != nil {
			continue
		}
		// 0711: the embedded PostgreSQL runs as another user when we are root and
		// must pass through; the key files themselves are 0600.
		if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		key, err := loadOrCreateKey(filepath.Join(cfg.DataDir, k.file))
		if err != nil {
			return err
		}
		*k.dst = key
	}
	return nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("%s is not base64 of 32 bytes: restore it from backup (endpoint secrets cannot be decrypted without it)", path)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	// O_EXCL: two processes starting at once must not each write a key.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadOrCreateKey(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// databases are the pools a process opens: pool for every statement,
// session for what needs a session of its own (the same pool unless
// DATABASE_URL is pooled per transaction: see db/direct.go).
type databases struct {
	pool, session *pgxpool.Pool
	box           *secretbox.Box
	reads         *replica.Reads // nil without HOOKLINE_READ_DATABASE_URL
}

// openDatabase connects to DATABASE_URL, or starts (or attaches to) the
// embedded cluster, and applies migrations. The returned close function
// closes the pools and stops a cluster this process started.
func openDatabase(ctx context.Context, cfg Config, log *slog.Logger) (*databases, func(), error) {
	if err := resolveKeys(&cfg); err != nil {
		return nil, nil, err
	}
	box, err := secretbox.New(cfg.SecretKey, nil)
	if err != nil {
		return nil, nil, err
	}
	dsn := cfg.DatabaseURL
	stopCluster := func() {}
	if cfg.Embedded() {
		cluster, err := embedded.Start(ctx, embedded.Options{DataDir: cfg.DataDir, Logger: log})
		if err != nil {
			return nil, nil, err
		}
		dsn = cluster.URL()
		stopCluster = func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cluster.Stop(stopCtx); err != nil {
				log.Error("stop embedded postgres", "err", err)
			} else if cluster.Owned() {
				log.Info("stopped embedded postgres")
			}
		}
	}
	poolCfg, err := poolConfig(dsn)
	if err != nil {
		stopCluster()
		return nil, nil, fmt.Errorf("database url: %w", err)
	}
	var directCfg *pgxpool.Config
	if !cfg.Embedded() {
		if directCfg, err = db.SeparateSessions(ctx, cfg.DirectDatabaseURL, poolCfg, log, poolConfig); err != nil {
			return nil, nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		stopCluster()
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		stopCluster()
		return nil, nil, fmt.Errorf("connect to database: %w", err)
	}
	session := pool
	if directCfg != nil {
		if session, err = pgxpool.NewWithConfig(ctx, directCfg); err != nil {
			pool.Close()
			return nil, nil, fmt.Errorf("connect to HOOKLINE_DIRECT_DATABASE_URL: %w", err)
		}
	}
	var reads *replica.Reads
	if cfg.Reads.URL != "" {
		if reads, err = replica.Open(cfg.Reads, pool, poolConfig, log); err != nil {
			if session != pool {
				session.Close()
			}
			pool.Close()
			return nil, nil, err
		}
	}
	closePools := func() {
		if reads != nil {
			reads.Close()
		}
		if session != pool {
			session.Close()
		}
		pool.Close()
	}
	// The migrations hold a session lock throughout.
	if err := migrations.Up(ctx, session, migrations.WithSecretBox(box)); err != nil {
		closePools()
		stopCluster()
		return nil, nil, err
	}
	return &databases{pool: pool, session: session, box: box, reads: reads}, func() { closePools(); stopCluster() }, nil
}

// defaultPoolConns is the most connections a process's pool opens when
// DATABASE_URL does not set pool_max_conns. Under serve the web's handlers
// and the worker's batches share it; a worker also opens two connections
// of its own (its ownership session, which runs the claims, and its
// LISTEN).
const defaultPoolConns = 24

// defaultConnectTimeout bounds a connection attempt to one host when
// DATABASE_URL sets no connect_timeout (poolConfig).
const defaultConnectTimeout = 5 * time.Second

// poolConfig is the pool for dsn: at most defaultPoolConns connections
// unless the URL sets pool_max_conns (pgx reads it, and its other pool_
// settings, from the URL), hookline's session settings and its
// application_name.
func poolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	// pgxpool takes pool_max_conns out of the parsed settings, so whether
	// the URL set it is read from pgconn's parse of the same string (a
	// password or host that merely contains the name does not count).
	conn, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if _, set := conn.RuntimeParams["pool_max_conns"]; !set {
		cfg.MaxConns = defaultPoolConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "hookline"
	// A server that is gone without a word (a machine powered off, a
	// network partition) drops packets rather than refusing: without a
	// bound each new connection waits out the kernel's SYN retries, about
	// two minutes, before trying the next host of a multi-host URL. pgconn
	// bounds each host's attempt by connect_timeout; 0 (unset) is forever.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	db.ConfigurePool(cfg)
	return cfg, nil
}

func withDatabase(ctx context.Context, cfg Config, log *slog.Logger, fn func(context.Context, *pgxpool.Pool) error) error {
	d, closeDB, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(ctx, d.pool)
}
