package secretbox

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func testKey() []byte { return bytes.Repeat([]byte{7}, KeySize) }

func TestSealOpen(t *testing.T) {
	b, err := New(testKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("whsec_c2VjcmV0")
	sealed, err := b.Seal(42, secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("round trip", func(t *testing.T) {
		got, err := b.Open(42, sealed)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})
	t.Run("plaintext not visible", func(t *testing.T) {
		if bytes.Contains(sealed, secret) {
			t.Fatal("ciphertext contains the plaintext")
		}
	})
	t.Run("bound to endpoint", func(t *testing.T) {
		if _, err := b.Open(43, sealed); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open for another endpoint: %v", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		other, _ := New(bytes.Repeat([]byte{8}, KeySize), nil)
		if _, err := other.Open(42, sealed); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open with another key: %v", err)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		bad := bytes.Clone(sealed)
		bad[len(bad)-1] ^= 1
		if _, err := b.Open(42, bad); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open tampered: %v", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		if _, err := b.Open(42, sealed[:5]); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open truncated: %v", err)
		}
	})
	t.Run("fresh nonce each time", func(t *testing.T) {
		again, _ := b.Seal(42, secret)
		if bytes.Equal(again, sealed) {
			t.Fatal("two seals of the same secret are identical")
		}
	})
}

func TestNewRejectsShortKey(t *testing.T) {
	if _, err := New(make([]byte, 16), nil); err == nil {
		t.Fatal("16-byte key accepted")
	}
}

func ExampleBox() {
	box, _ := New(bytes.Repeat([]byte{1}, KeySize), nil)
	sealed, _ := box.Seal(7, []byte("whsec_example"))
	plain, _ := box.Open(7, sealed)
	fmt.Println(string(plain))
	// Output: whsec_example
}
