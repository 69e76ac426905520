// Package secretbox encrypts endpoint signing secrets and custom header
// values at rest with AES-256-GCM under hookline's master key
// (HOOKLINE_SECRET_KEY). Each ciphertext is bound to its endpoint (and a
// header value to its header name) through the additional data, so a
// ciphertext copied onto another endpoint's row does not decrypt.
//
// It lives under db because the migrations seal existing values with it
// (db/migrations), and the web server and the worker, which both import
// db, share it from there.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// KeySize is the master key length: 32 bytes selects AES-256.
const KeySize = 32

// Box seals and opens secrets. Safe for concurrent use.
type Box struct {
	aead cipher.AEAD
	rand io.Reader
}

// New returns a Box for a 32-byte master key. random supplies nonces
// (crypto/rand.Reader when nil).
func New(key []byte, random io.Reader) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if random == nil {
		random = rand.Reader
	}
	return &Box{aead: aead, rand: random}, nil
}

// Seal encrypts plaintext for endpointID: nonce || ciphertext || tag.
func (b *Box) Seal(endpointID int64, plaintext []byte) ([]byte, error) {
	return b.seal(ad(endpointID), plaintext)
}

func (b *Box) seal(ad, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := io.ReadFull(b.rand, nonce); err != nil {
		return nil, fmt.Errorf("secret nonce: %w", err)
	}
	return b.aead.Seal(nonce, nonce, plaintext, ad), nil
}

// ErrDecrypt means the ciphertext is corrupt, belongs to another endpoint,
// or was sealed under a different master key.
var ErrDecrypt = errors.New("secret does not decrypt: wrong HOOKLINE_SECRET_KEY or corrupted row")

// Open decrypts a value sealed for endpointID.
func (b *Box) Open(endpointID int64, sealed []byte) ([]byte, error) {
	return b.open(ad(endpointID), sealed)
}

func (b *Box) open(ad, sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrDecrypt
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], ad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return out, nil
}

func ad(endpointID int64) []byte {
	return strconv.AppendInt([]byte("hookline endpoint secret "), endpointID, 10)
}
