package worker

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// tallyChangesPerFold bounds one fold's transaction, and foldsPerTick a
// tick's folds, so a backlog of changes (a bulk replay's millions) is
// folded over several ticks without holding up the tidy loop's analyses.
const (
	tallyChangesPerFold = 50_000
	foldsPerTick        = 4
)

// foldDeadLetterTallies folds the dead-letter tally changes (written by
// triggers as deliveries die and are replayed, migration 00027) into the
// tallies the dead-letter page reads, and drops tallies left empty. The
// page adds the changes not folded yet, so folding only keeps its read
// short.
func (h *housekeeper) foldDeadLetterTallies(ctx context.Context) error {
	for range foldsPerTick {
		var n int64
		err := pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error {
			q := h.q.WithTx(tx)
			var err error
			if n, err = q.DeadLetterTallyFold(ctx, tallyChangesPerFold); err != nil || n == 0 {
				return err
			}
			_, err = q.DeadLetterTallyPrune(ctx)
			return err
		})
		if err != nil || n < tallyChangesPerFold {
			return err
		}
	}
	return nil
}
