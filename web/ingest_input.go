// What ingest accepts of an event, and how a refusal reads.

package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hookline/hookline/db"
	"github.com/jackc/pgx/v5/pgconn"
)

// refusedEvent is the event at index at of a store that PostgreSQL refused
// as input (a data exception or a check violation).
type refusedEvent struct {
	at  int
	err *pgconn.PgError
}

func (e *refusedEvent) Error() string { return "event refused: " + e.err.Error() }

// apiError names the field when the refusal does (a column, or the
// constraint events_<column>_check); otherwise it blames the payload, the
// only free-form part of an event.
func (e *refusedEvent) apiError() error {
	field := e.err.ColumnName
	if field == "" {
		field = "payload"
		for _, col := range []string{"type", "idempotency_key", "partner_id", "payload"} {
			if strings.HasPrefix(e.err.ConstraintName, "events_"+col+"_") {
				field = col
			}
		}
	}
	return invalidField(field, "PostgreSQL cannot store this value (SQLSTATE "+e.err.Code+")")
}

// refusedAsInput reports whether err is PostgreSQL refusing a value, as
// opposed to a failure of the database or of hookline.
func refusedAsInput(err error) (*pgconn.PgError, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil, false
	}
	return pgErr, strings.HasPrefix(pgErr.Code, "22") || (pgErr.Code == "23514" && !db.RoutedToDefault(err)) || pgErr.Code == "23502"
}

func validateEvent(in eventInput) (validated, error) {
	v := validated{typ: strings.TrimSpace(in.Type), partner: in.PartnerID}
	switch {
	case v.typ == "":
		return v, invalidField("type", "is required")
	case !eventTypeName.MatchString(v.typ):
		return v, invalidField("type", "must be 1-200 characters: letters, digits, _ . : - (such as conversion.approved)")
	}
	raw := bytes.TrimSpace(in.Payload)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return v, invalidField("payload", "is required")
	}
	if raw[0] != '{' {
		return v, invalidField("payload", "must be a JSON object")
	}
	// Valid JSON that PostgreSQL or its JSON operators would refuse is this
	// event's fault, answered here rather than failing the transaction
	// every event of a batch shares.
	if msg := payloadProblem(raw); msg != "" {
		return v, invalidField("payload", msg)
	}
	v.payload = compactJSON(raw)
	if in.IdempotencyKey != nil {
		k := *in.IdempotencyKey
		if k == "" || len(k) > 255 || !utf8.ValidString(k) || strings.IndexFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			return v, invalidField("idempotency_key", "must be 1-255 printable characters")
		}
		v.key = &k
	}
	if in.PartnerID != nil && *in.PartnerID <= 0 {
		return v, invalidField("partner_id", "must be a positive integer")
	}
	return v, nil
}

// compactJSON removes insignificant whitespace and keeps everything else
// (key order, number spelling) exactly as the producer sent it.
func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{http.StatusInternalServerError, "internal", "internal error", ""}
}
