package account

import "golang.org/x/crypto/bcrypt"

// UseMinCost is a test hook: from then on HashPassword hashes, and
// DummyCheck checks, at bcrypt's minimum cost. At the production cost one
// hash or check takes seconds of CPU under the race detector, which a
// test pays at every sign-in through a provider (its user is provisioned
// with a hashed random password), every user it adds and every sign-in
// with an unknown email. Only tests call it, before any test runs (from
// TestMain); this package's own tests do not, and check the real cost.
func UseMinCost() {
	h, err := bcrypt.GenerateFromPassword([]byte(RandomToken(16)), bcrypt.MinCost)
	if err != nil {
		panic("bcrypt at its minimum cost failed: " + err.Error())
	}
	hashCost, dummyHash = bcrypt.MinCost, h
}
