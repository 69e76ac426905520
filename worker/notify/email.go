package notify

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
)

// Email is the body of an email channel's delivery: the worker turns it
// into a multipart/alternative message (worker/mail). Text and HTML carry
// the same facts and link as the chat and webhook styles.
type Email struct {
	Kind    Kind   `json:"kind"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
}

// subjects are the short headlines of the email subject line.
var subjects = map[Kind]string{
	BreakerOpened:       "breaker opened",
	BreakerClosed:       "breaker closed",
	EndpointWarned:      "failure budget warning",
	EndpointDisabled:    "endpoint disabled",
	EndpointEnabled:     "endpoint re-enabled",
	AlertFired:          "pipeline alert fired",
	AlertResolved:       "pipeline alert resolved",
	DeadLetterNew:       "new dead-letter cluster",
	BreakerHeldOpen:     "breaker still open",
	CertificateExpiring: "client certificate expiring",
	Test:                "test notification",
}

// Subject is the subject line: "hookline: <what> — <endpoint> (<partner>)".
func Subject(m Message) string {
	what := subjects[m.Kind]
	if what == "" {
		what = string(m.Kind)
	}
	switch {
	case m.Kind == EndpointWarned || m.Kind == CertificateExpiring:
		unit := "%"
		if m.Kind == CertificateExpiring {
			unit = " days"
		}
		what += fmt.Sprintf(" (%s%s)", m.Subject, unit)
	case m.Kind == AlertFired || m.Kind == AlertResolved:
		what += ": " + m.Subject
	}
	if m.EndpointID != 0 {
		what += fmt.Sprintf(" — %s (%s)", m.Endpoint, m.Partner)
	}
	return "hookline: " + what
}

var emailHTML = template.Must(template.New("email").Parse(`<!doctype html>
<html><body style="font-family: sans-serif; line-height: 1.4">
<p>{{.Sentence}}</p>
{{- if .Figures}}
<table style="border-collapse: collapse">{{range .Figures}}
<tr><th style="text-align: left; padding-right: 1em">{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}
</table>
{{- end}}
{{- if .Repeats}}
<p><em>{{.Repeats}}</em></p>
{{- end}}
{{- if .Link}}
<p><a href="{{.Link}}">{{.Link}}</a></p>
{{- end}}
</body></html>
`))

type figureRow struct{ Name, Value string }

// ComposeEmail is the email style's body. The plain text is Text's
// paragraph with the link on a line of its own; the HTML shows the same
// sentence, the figures as a table, the summary of repeats and the link,
// every value escaped.
func ComposeEmail(m Message) Email {
	p := parts(m)
	text := p.text
	if p.link != "" {
		text += "\n\n" + p.link
	}
	data := struct {
		Sentence, Repeats, Link string
		Figures                 []figureRow
	}{Sentence: p.sentence, Repeats: p.repeats, Link: p.link, Figures: p.rows}
	var b bytes.Buffer
	_ = emailHTML.Execute(&b, data) // a fixed template over strings cannot fail
	return Email{Kind: m.Kind, Subject: Subject(m), Text: text, HTML: b.String()}
}

// PortalLink is the partner portal's page of one endpoint, under base (the
// public URL); empty when base is, or for no endpoint.
func PortalLink(base string, endpointID int64) string {
	if base == "" || endpointID == 0 {
		return ""
	}
	return fmt.Sprintf("%s/portal/endpoints/%d", strings.TrimRight(base, "/"), endpointID)
}
