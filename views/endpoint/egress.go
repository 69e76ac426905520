package endpoint

import (
	"strconv"
	"time"

	"github.com/hookline/hookline/views/components"
)

// EgressID is the egress panel's id.
const EgressID = "endpoint-egress"

// Egress is how an endpoint's requests leave (DESIGN §17), fit to show:
// which proxy, CA, client certificate and credential are in use, never a
// key or a secret. The partner portal shows it too, without the operator's
// proxy address or the credential's details.
type Egress struct {
	EndpointID int64
	// Proxy: "default: http://host:port", "default: direct", "direct", or
	// the endpoint's own http://host:port ("egress proxy" in the portal).
	Proxy string
	// CASubjects are the subjects of the extra CAs trusted (in addition
	// to the system's); none: the system's only.
	CASubjects []string
	// ClientCert is the client certificate's subject, "" for none.
	ClientCert        string
	ClientCertExpires *time.Time
	Credential        string // none | basic | oauth2
	// CredentialDetail is the credential's non-secret settings (username,
	// client id, token URL, scopes, audience) for operators; "" in the
	// portal.
	CredentialDetail string
	Now              time.Time
	CanOperate       bool
}

// Expiry is the client certificate's expiry warning: critical once it is
// expired or 7 days or less from it, a warning 30 days ahead, nothing
// before (Tone "").
func (e Egress) Expiry() components.AlertData {
	if e.ClientCertExpires == nil {
		return components.AlertData{}
	}
	left := e.ClientCertExpires.Sub(e.Now)
	days := int(left.Hours() / 24)
	switch {
	case left <= 0:
		return components.AlertData{Tone: components.ToneCritical, Title: "The client certificate has expired",
			Message: "Deliveries to this endpoint fail until a new certificate is set."}
	case days <= 7:
		return components.AlertData{Tone: components.ToneCritical, Title: "The client certificate expires in " + daysText(days),
			Message: "Set its renewal now: after " + e.ClientCertExpires.UTC().Format(time.DateOnly) + " deliveries fail."}
	case days <= 30:
		return components.AlertData{Tone: components.ToneWarn, Title: "The client certificate expires in " + daysText(days),
			Message: "Ask the partner for its renewal, or issue one, before " + e.ClientCertExpires.UTC().Format(time.DateOnly) + "."}
	}
	return components.AlertData{}
}

func daysText(d int) string {
	switch d {
	case 0:
		return "less than a day"
	case 1:
		return "1 day"
	}
	return strconv.Itoa(d) + " days"
}
