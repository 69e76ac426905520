package worker

import (
	"context"
	"testing"

	"github.com/hookline/hookline/db"
)

// TestPipelineIsOneTransaction: queued statements and the query run in one
// implicit transaction that commits at the end; an error in any of them
// rolls all of them back and reaches the caller; settings made with
// set_config(..., true) end with it.
func TestPipelineIsOneTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, "CREATE TABLE pl (v int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	collect := func(p *db.Pipeline, sql string) ([]int32, error) {
		rows, err := p.Query(ctx, sql)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []int32
		for rows.Next() {
			var v int32
			if err := rows.Scan(&v); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, rows.Err()
	}

	p := db.NewPipeline(conn)
	_, _ = p.Exec(ctx, "SELECT set_config('hookline.probe', 'in pipeline', true)")
	_, _ = p.Exec(ctx, "INSERT INTO pl VALUES (1)")
	got, err := collect(p, "INSERT INTO pl VALUES (2) RETURNING v")
	if err != nil || len(got) != 1 || got[0] != 2 {
		t.Fatalf("pipeline: %v %v", got, err)
	}
	if n := e.count("SELECT count(*) FROM pl"); n != 2 {
		t.Fatalf("committed rows = %d, want 2", n)
	}
	var setting string
	if err := conn.QueryRow(ctx, "SELECT coalesce(current_setting('hookline.probe', true), '')").Scan(&setting); err != nil || setting != "" {
		t.Fatalf("a transaction-local setting outlived the pipeline: %q (%v)", setting, err)
	}

	// ... while it holds for the statements after it in the pipeline.
	_, _ = p.Exec(ctx, "SELECT set_config('hookline.probe', '7', true)")
	if got, err := collect(p, "SELECT current_setting('hookline.probe')::int"); err != nil || len(got) != 1 || got[0] != 7 {
		t.Fatalf("setting inside the pipeline: %v %v", got, err)
	}

	// A failing queued statement: nothing of the pipeline is kept.
	_, _ = p.Exec(ctx, "INSERT INTO pl VALUES (3)")
	_, _ = p.Exec(ctx, "INSERT INTO pl VALUES (1)") // duplicate key
	if _, err := collect(p, "INSERT INTO pl VALUES (4) RETURNING v"); err == nil {
		t.Fatal("a failing queued statement was not reported")
	}
	// A failing query after good statements: same.
	_, _ = p.Exec(ctx, "INSERT INTO pl VALUES (5)")
	if _, err := collect(p, "SELECT 1/0"); err == nil {
		t.Fatal("a failing query was not reported")
	}
	if n := e.count("SELECT count(*) FROM pl"); n != 2 {
		t.Fatalf("rows after failed pipelines = %d, want 2", n)
	}
	// The connection is usable afterwards, outside any transaction.
	if got, err := collect(p, "SELECT v FROM pl ORDER BY v"); err != nil || len(got) != 2 {
		t.Fatalf("after errors: %v %v", got, err)
	}
	if s := conn.Conn().PgConn().TxStatus(); s != 'I' {
		t.Fatalf("connection left in transaction state %q", s)
	}

	// The generated claim statements run through it.
	q := db.New(db.NewPipeline(conn))
	_ = q.ClaimSettings(ctx)
	rows, err := q.DeliveryClaim(ctx, db.DeliveryClaimParams{MaxRows: 10})
	if err != nil || len(rows) != 0 {
		t.Fatalf("claim through the pipeline: %v %v", rows, err)
	}
}
