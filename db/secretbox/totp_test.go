package secretbox

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpenTOTP(t *testing.T) {
	b, err := New(testKey(), nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
	sealed, err := b.SealTOTP(7, secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("round trip", func(t *testing.T) {
		got, err := b.OpenTOTP(7, sealed)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("OpenTOTP = %q, %v", got, err)
		}
	})
	t.Run("bound to the user", func(t *testing.T) {
		if _, err := b.OpenTOTP(8, sealed); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("OpenTOTP for another user: %v", err)
		}
	})
	t.Run("not an endpoint secret of the same id", func(t *testing.T) {
		if _, err := b.Open(7, sealed); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("Open as endpoint 7's secret: %v", err)
		}
		endpoint, _ := b.Seal(7, secret)
		if _, err := b.OpenTOTP(7, endpoint); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("OpenTOTP of endpoint 7's secret: %v", err)
		}
	})
}
