package web

import (
	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/endpoint"
)

// signedPostbackView is the endpoint page's verification help: set only for
// a postback with a signature parameter.
func signedPostbackView(e db.Endpoint) endpoint.SignedPostback {
	if e.Kind != "postback" || e.SignatureParam == "" {
		return endpoint.SignedPostback{}
	}
	return endpoint.SignedPostback{Param: e.SignatureParam}
}
