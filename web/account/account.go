// Package account owns hookline's principals: dashboard users (bcrypt
// passwords, roles) and API keys (random, stored as SHA-256). The CLI and the
// dashboard both create them through here.
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/hookline/hookline/db"
)

// Roles, least to most privileged.
const (
	RoleViewer   = "viewer"   // reads everything
	RoleOperator = "operator" // replays, rotates, pauses, edits endpoints and partners
	RoleAdmin    = "admin"    // also manages users and API keys
)

// RoleAllows reports whether role has at least the privileges of need.
func RoleAllows(role, need string) bool {
	rank := map[string]int{RoleViewer: 1, RoleOperator: 2, RoleAdmin: 3}
	return rank[role] > 0 && rank[role] >= rank[need]
}

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool { return r == RoleViewer || r == RoleOperator || r == RoleAdmin }

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 10

// bcryptCost balances login latency (~50 ms) against offline guessing.
const bcryptCost = 11

// hashCost is the cost HashPassword hashes at: bcryptCost, except in tests
// that call UseMinCost.
var hashCost = bcryptCost

// FieldError is a validation problem with one input field.
type FieldError struct{ Field, Message string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ErrDuplicate means a user with that email already exists.
var ErrDuplicate = errors.New("already exists")

// HashPassword returns the bcrypt hash of password.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), hashCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CheckPassword compares in constant time.
func CheckPassword(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// DummyCheck spends the same time as CheckPassword for unknown emails, so
// response time does not reveal which accounts exist.
func DummyCheck(password string) {
	_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
}

// dummyHash is a bcrypt hash at bcryptCost, written out rather than
// computed: generating it at package init cost about 120 ms of CPU on every
// start of every hookline command, the worker's and the CLI's included.
// TestDummyHashMatchesCost keeps it at bcryptCost.
var dummyHash = []byte("$2a$11$qZOpK2siapFO3weL71QqE.jIR72haytrTFWmyZZtOBX6F.VvcSuHO")

// NormalizeEmail validates an email address and returns it trimmed.
func NormalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", &FieldError{"email", "is required"}
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || a.Name != "" {
		return "", &FieldError{"email", "is not a valid email address"}
	}
	return email, nil
}

// AddUser creates a user. With an empty password a random one is generated
// and returned (shown once).
func AddUser(ctx context.Context, q db.DBTX, email, role, password string) (db.User, string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return db.User{}, "", err
	}
	if !ValidRole(role) {
		return db.User{}, "", &FieldError{"role", "must be admin, operator or viewer"}
	}
	generated := ""
	if password == "" {
		generated = RandomToken(18)
		password = generated
	}
	if len(password) < MinPasswordLen {
		return db.User{}, "", &FieldError{"password", fmt.Sprintf("must be at least %d characters", MinPasswordLen)}
	}
	if len(password) > 72 {
		return db.User{}, "", &FieldError{"password", "must be at most 72 bytes"}
	}
	hash, err := HashPassword(password)
	if err != nil {
		return db.User{}, "", err
	}
	u, err := db.New(q).UserCreate(ctx, db.UserCreateParams{Email: email, PasswordHash: hash, Role: role})
	if db.IsUniqueViolation(err) {
		return db.User{}, "", &FieldError{"email", "a user with this email already exists"}
	}
	if err != nil {
		return db.User{}, "", fmt.Errorf("create user: %w", err)
	}
	return u, generated, nil
}

// APIKeyPrefix starts every key, so leaked keys are easy to recognise in
// code and logs scanners.
const APIKeyPrefix = "hk_"

// HashAPIKey is the stored form of a key. Keys carry 256 random bits, so a
// fast hash is not brute-forceable and keeps per-request checks cheap.
func HashAPIKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// RandomToken returns n random bytes, base64url without padding.
func RandomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the kernel's CSPRNG does not fail
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
