package worker

import (
	"context"
	"crypto/tls"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/db/dbtest"
	"github.com/hookline/hookline/worker/sender"
	"github.com/hookline/hookline/worker/ssrf"
)

// BenchmarkAttemptInsert measures the completion's attempt write: a
// batch's outcomes turned into AttemptInsertRows' arrays, encoded and
// inserted in the flush's transaction (rolled back here). Batches of 16
// are what a steady rate closes every few milliseconds; 512 is a full one
// (FlushSize). Half the attempts went over TLS through a proxy, with a
// client certificate and a credential, as an endpoint with egress settings
// sends them.
func BenchmarkAttemptInsert(b *testing.B) {
	pool := dbtest.Pool(b)
	ctx := context.Background()
	q := db.New(pool)
	started := time.Now().UTC()
	for _, n := range []int{16, 512} {
		batch := make([]outcome, n)
		applied := map[int64]bool{}
		for i := range batch {
			id := int64(i + 1)
			res := sender.Result{Outcome: sender.OK, StatusCode: 200, Started: started, Duration: 12 * time.Millisecond,
				Excerpt: "ok", RemoteAddr: "127.0.0.1:443", RemoteClass: ssrf.ClassPublic}
			if i%2 == 0 {
				res.Proxy, res.TLSVersion, res.TLSResumed = "http://127.0.0.1:3128", tls.VersionTLS13, true
				setEgressUses(&res)
			}
			batch[i] = outcome{d: claimed{ID: id, EndpointID: id % 8}, res: res}
			applied[id] = true
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					rows := attemptRows(batch, applied)
					if err := q.WithTx(tx).AttemptInsertRows(ctx, rows); err != nil {
						return err
					}
					return errRollback
				})
				if err != errRollback {
					b.Fatal(err)
				}
			}
		})
	}
}

// errRollback ends a benchmark's transaction without committing it.
var errRollback = rollbackError{}

type rollbackError struct{}

func (rollbackError) Error() string { return "rollback" }

// setEgressUses fills what an endpoint's egress settings add to a result.
func setEgressUses(r *sender.Result) {
	r.ClientCert, r.Credential = "CN=hookline,O=Partner", "oauth2"
}
