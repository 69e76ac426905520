package account

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookline/hookline/db"
)

// API key scopes (DESIGN §16). Each API route names the scopes it takes on
// its line in web/routes.go; admin takes every route.
const (
	ScopeIngest = "ingest" // posts events, reads back the events it posted
	ScopeRead   = "read"   // every GET of the API
	ScopeAdmin  = "admin"  // everything, as keys did before scopes
)

// Scopes lists the scopes, least to most privileged, for forms and usage
// lines.
var Scopes = []string{ScopeIngest, ScopeRead, ScopeAdmin}

// ValidScope reports whether s is a known scope.
func ValidScope(s string) bool { return s == ScopeIngest || s == ScopeRead || s == ScopeAdmin }

// ScopeAllows reports whether a key of scope have may call a route that
// takes any of need. admin may call every route.
func ScopeAllows(have string, need ...string) bool {
	if have == ScopeAdmin {
		return true
	}
	for _, n := range need {
		if n == have {
			return true
		}
	}
	return false
}

// APIKeySpec is a key to create.
type APIKeySpec struct {
	Name      string
	Scope     string // ScopeAdmin when empty
	PartnerID *int64 // binds the key to one partner (ingest and read only)
	CreatedBy string
}

// CreateAPIKey creates an admin key (the scope of keys made before scopes
// existed) and returns its value (shown once) and row.
func CreateAPIKey(ctx context.Context, q db.DBTX, name, createdBy string) (string, db.APIKeyCreateRow, error) {
	return CreateScopedAPIKey(ctx, q, APIKeySpec{Name: name, CreatedBy: createdBy})
}

// CreateScopedAPIKey validates spec, creates the key and returns its value
// (shown once) and row. Problems with the input are *FieldError naming
// name, scope or partner.
func CreateScopedAPIKey(ctx context.Context, q db.DBTX, spec APIKeySpec) (string, db.APIKeyCreateRow, error) {
	name := strings.TrimSpace(spec.Name)
	if name == "" {
		return "", db.APIKeyCreateRow{}, &FieldError{"name", "is required"}
	}
	if len(name) > 200 {
		return "", db.APIKeyCreateRow{}, &FieldError{"name", "must be at most 200 characters"}
	}
	scope := spec.Scope
	if scope == "" {
		scope = ScopeAdmin
	}
	if !ValidScope(scope) {
		return "", db.APIKeyCreateRow{}, &FieldError{"scope", "must be ingest, read or admin"}
	}
	if spec.PartnerID != nil {
		if err := checkKeyPartner(ctx, q, scope, *spec.PartnerID); err != nil {
			return "", db.APIKeyCreateRow{}, err
		}
	}
	key := APIKeyPrefix + RandomToken(32)
	row, err := db.New(q).APIKeyCreate(ctx, db.APIKeyCreateParams{
		Name:      name,
		Prefix:    key[:len(APIKeyPrefix)+8],
		KeyHash:   HashAPIKey(key),
		CreatedBy: spec.CreatedBy,
		Scope:     scope,
		PartnerID: spec.PartnerID,
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // the partner went meanwhile
		return "", db.APIKeyCreateRow{}, &FieldError{"partner", "no partner with this id"}
	}
	if err != nil {
		return "", db.APIKeyCreateRow{}, fmt.Errorf("create api key: %w", err)
	}
	return key, row, nil
}

// checkKeyPartner refuses a partner a key cannot be bound to: an admin key
// acts across partners, and an archived partner takes no new events.
func checkKeyPartner(ctx context.Context, q db.DBTX, scope string, partnerID int64) error {
	if scope == ScopeAdmin {
		return &FieldError{"partner", "an admin key acts on every partner and cannot be bound to one: choose the ingest or read scope"}
	}
	if partnerID <= 0 {
		return &FieldError{"partner", "must be a partner id (a positive integer)"}
	}
	p, err := db.New(q).PartnerGet(ctx, partnerID)
	if db.NoRows(err) {
		return &FieldError{"partner", fmt.Sprintf("no partner with id %d", partnerID)}
	}
	if err != nil {
		return fmt.Errorf("load partner: %w", err)
	}
	if p.ArchivedAt != nil {
		return &FieldError{"partner", fmt.Sprintf("partner %d (%s) is archived", partnerID, p.Name)}
	}
	return nil
}
