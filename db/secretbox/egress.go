package secretbox

import "strconv"

// An endpoint's egress secrets (its client certificate's private key, its
// receiver password or OAuth2 client secret) are sealed under additional
// data naming the endpoint and the field: a key copied into the password's
// column, or onto another endpoint, does not open.

// Egress fields.
const (
	EgressClientKey  = "client_key"
	EgressAuthSecret = "auth_secret"
)

// SealEgress encrypts an egress secret of an endpoint.
func (b *Box) SealEgress(endpointID int64, field string, plaintext []byte) ([]byte, error) {
	return b.seal(egressAD(endpointID, field), plaintext)
}

// OpenEgress decrypts an egress secret of an endpoint.
func (b *Box) OpenEgress(endpointID int64, field string, sealed []byte) ([]byte, error) {
	return b.open(egressAD(endpointID, field), sealed)
}

func egressAD(endpointID int64, field string) []byte {
	return strconv.AppendInt([]byte("hookline endpoint egress "+field+" "), endpointID, 10)
}
