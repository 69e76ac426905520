package db

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// NoRows reports whether a single-row query found no row. It is the one
// place the rest of hookline learns that from pgx.
func NoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// IsUniqueViolation reports whether PostgreSQL refused a row because it
// would duplicate a unique key (SQLSTATE 23505).
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// RoutedToDefault reports whether PostgreSQL refused a row it had routed
// to the default partition of a partitioned table (events,
// delivery_attempts, deliveries_delivered) because a partition made
// meanwhile took that range from it (worker/partitions.go's
// makePartition): the statement waited for the default partition while
// the new one was attached, then found the row outside the default's new
// bounds. The same statement again goes to the new partition. (A row that
// breaks a CHECK constraint names the constraint; a partition's bound
// names none.)
func RoutedToDefault(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && pgErr.ConstraintName == "" &&
		strings.HasSuffix(pgErr.TableName, "_default")
}
