package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/web"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/app"
	"github.com/hookline/hookline/worker/ssrf"
)

// eventLogServer builds the web handler the event log bench times: the
// same server serve runs, on the bench's database.
func eventLogServer(log *slog.Logger) func(*pgxpool.Pool) (http.Handler, error) {
	return func(pool *pgxpool.Pool) (http.Handler, error) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		return web.New(web.Config{Pool: pool, SecretKey: key, SessionKey: key, Guard: ssrf.New(nil),
			MaxBodyBytes: 1 << 20, Version: app.Version, Logger: log})
	}
}

// eventLogUsers creates the bench's API key and an operator to sign in as.
func eventLogUsers(ctx context.Context, pool *pgxpool.Pool) (string, string, string, error) {
	key, _, err := account.CreateAPIKey(ctx, pool, "event log bench", "bench")
	if err != nil {
		return "", "", "", err
	}
	email := fmt.Sprintf("bench-%d@hookline.invalid", time.Now().UnixNano())
	_, password, err := account.AddUser(ctx, pool, email, account.RoleOperator, "")
	return key, email, password, err
}
