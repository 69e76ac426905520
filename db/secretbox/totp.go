package secretbox

import "strconv"

// A dashboard user's TOTP secret is sealed like an endpoint's signing
// secret, under additional data of its own that names the user: a
// ciphertext copied onto another user's row, or between a user's and an
// endpoint's of the same id, does not open.

// SealTOTP encrypts a user's TOTP secret.
func (b *Box) SealTOTP(userID int64, secret []byte) ([]byte, error) {
	return b.seal(totpAD(userID), secret)
}

// OpenTOTP decrypts a user's TOTP secret.
func (b *Box) OpenTOTP(userID int64, sealed []byte) ([]byte, error) {
	return b.open(totpAD(userID), sealed)
}

func totpAD(userID int64) []byte {
	return strconv.AppendInt([]byte("hookline user totp secret "), userID, 10)
}
