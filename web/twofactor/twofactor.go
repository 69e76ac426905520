// Package twofactor owns the pure parts of hookline's two-factor sign-in:
// TOTP secrets and codes (RFC 6238 through github.com/pquerna/otp: SHA-1,
// 6 digits, 30-second steps, one step of clock skew either way), one-time
// recovery codes and their salted hashes, and the enrolment QR code as SVG
// path data. It stores nothing; web keeps the sealed secret, the last used
// time step and the hashes in PostgreSQL.
package twofactor

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// Issuer names hookline in authenticator apps.
const Issuer = "hookline"

// Period is the length of one time step; Skew is how many steps before or
// after the current one a code is accepted for (clocks of phones drift).
const (
	Period = 30 * time.Second
	Skew   = 1
)

var opts = totp.ValidateOpts{Period: uint(Period / time.Second), Skew: Skew, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// NewSecret returns a new random secret (160 bits, base32 without padding,
// the form authenticator apps take when typed in).
func NewSecret() (string, error) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: Issuer, AccountName: "x", Period: opts.Period, Digits: opts.Digits, Algorithm: opts.Algorithm})
	if err != nil {
		return "", fmt.Errorf("totp secret: %w", err)
	}
	return key.Secret(), nil
}

// KeyURI is the otpauth:// URI of a secret that the enrolment QR code
// carries: the app shows it as "hookline (email)".
func KeyURI(secret, account string) (string, error) {
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	if err != nil {
		return "", fmt.Errorf("totp secret: %w", err)
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: Issuer, AccountName: account, Secret: raw, Period: opts.Period, Digits: opts.Digits, Algorithm: opts.Algorithm})
	if err != nil {
		return "", fmt.Errorf("totp key uri: %w", err)
	}
	return key.URL(), nil
}

// Step is the RFC 6238 time step of t.
func Step(t time.Time) int64 { return t.Unix() / int64(opts.Period) }

// Code returns the code of secret for the time step of t (tests compute
// codes with it as an app would).
func Code(secret string, t time.Time) (string, error) {
	return totp.GenerateCodeCustom(secret, t, opts)
}

// Match reports whether code is the secret's code for the time step of now
// or one step either side, and for which step. Callers accept it only for a
// step later than the last one accepted (the replay guard). totp.Validate
// does not say which step matched, so the steps are tried here one by one,
// each with the library's own code generator, in constant time.
func Match(secret, code string, now time.Time) (step int64, ok bool) {
	if len(code) != opts.Digits.Length() {
		return 0, false
	}
	for i := -Skew; i <= Skew; i++ {
		t := now.Add(time.Duration(i) * Period)
		want, err := totp.GenerateCodeCustom(secret, t, opts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			step, ok = Step(t), true
		}
	}
	return step, ok
}

// Kind is what a typed code looks like.
type Kind int

const (
	// Invalid is neither: the wrong length or characters.
	Invalid Kind = iota
	// TOTP is six digits from an authenticator app.
	TOTP
	// Recovery is a one-time recovery code.
	Recovery
)

// Normalize reads a typed code: spaces and dashes are dropped and letters
// lower-cased ("123 456" and "ABCD-EFGH-…" work as printed).
func Normalize(typed string) (Kind, string) {
	s := strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return r
	}, typed)
	switch {
	case len(s) == opts.Digits.Length() && strings.Trim(s, "0123456789") == "":
		return TOTP, s
	case len(s) == recoveryLen && strings.Trim(s, recoveryAlphabet) == "":
		return Recovery, s
	}
	return Invalid, ""
}

// RecoveryCount is how many recovery codes a user gets at a time.
const RecoveryCount = 10

// Recovery codes are 16 characters of a 32-letter alphabet (80 bits),
// printed in groups of four. The alphabet leaves out 0, 1, l and o, which
// read alike.
const (
	recoveryAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"
	recoveryLen      = 16
)

// NewRecoveryCodes returns RecoveryCount new codes, as shown to the user
// ("abcd-efgh-ijkm-npqr").
func NewRecoveryCodes() ([]string, error) {
	codes := make([]string, RecoveryCount)
	buf := make([]byte, recoveryLen)
	for i := range codes {
		if _, err := rand.Read(buf); err != nil {
			return nil, fmt.Errorf("recovery codes: %w", err)
		}
		var b strings.Builder
		for j, c := range buf {
			if j > 0 && j%4 == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(recoveryAlphabet[int(c)%len(recoveryAlphabet)]) // 256 is a multiple of 32: no bias
		}
		codes[i] = b.String()
	}
	return codes, nil
}

// Hashed is a recovery code as stored.
type Hashed struct {
	Salt, Hash []byte
}

// HashRecoveryCode returns a stored form of a code with a new random salt.
// SHA-256 suffices: the code has 80 random bits, so there is no dictionary
// to slow down, and the salt keeps equal codes' hashes apart.
func HashRecoveryCode(code string) (Hashed, error) {
	kind, norm := Normalize(code)
	if kind != Recovery {
		return Hashed{}, errors.New("not a recovery code")
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return Hashed{}, fmt.Errorf("recovery code salt: %w", err)
	}
	return Hashed{Salt: salt, Hash: recoveryHash(salt, norm)}, nil
}

// RecoveryMatches reports whether a normalized code (see Normalize) is the
// stored one, in constant time.
func RecoveryMatches(stored Hashed, normalized string) bool {
	return subtle.ConstantTimeCompare(recoveryHash(stored.Salt, normalized), stored.Hash) == 1
}

func recoveryHash(salt []byte, normalized string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(normalized))
	return h.Sum(nil)
}
