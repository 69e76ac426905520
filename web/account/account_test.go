package account

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestDummyHashMatchesCost: an unknown email's check costs what a known
// one's does only while the dummy hash has the cost real hashes get.
func TestDummyHashMatchesCost(t *testing.T) {
	cost, err := bcrypt.Cost(dummyHash)
	if err != nil {
		t.Fatalf("dummy hash is not a bcrypt hash: %v", err)
	}
	if cost != bcryptCost {
		t.Fatalf("dummy hash cost %d, passwords are hashed at %d: regenerate it", cost, bcryptCost)
	}
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := bcrypt.Cost([]byte(h)); c != cost {
		t.Fatalf("HashPassword cost %d, dummy %d", c, cost)
	}
	if CheckPassword(string(dummyHash), "correct horse") {
		t.Fatal("the dummy hash accepted a password")
	}
}
