package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// readBody reads the request body up to the configured limit; a larger body
// is a 413 whether or not Content-Length announced it.
func (s *Server) readBody(c echo.Context) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, tooLarge(s.cfg.MaxBodyBytes)
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(s.cfg.MaxBodyBytes)
	}
	if err != nil {
		return nil, badRequest("could not read the request body")
	}
	return body, nil
}

func tooLarge(limit int64) error {
	return &apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body exceeds %d bytes", limit), ""}
}

// decodeJSON reads a JSON object into dst strictly: malformed JSON is a 400;
// an unknown field or a value of the wrong type is a 422 naming the field.
func (s *Server) decodeJSON(c echo.Context, dst any) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

func decodeStrict(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return badRequest("malformed JSON: unexpected data after the object")
	}
	return checkText(dst)
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badRequest(fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: unexpected end of input")
	case errors.As(err, &typ):
		// encoding/json names an embedded struct in the path; the API's
		// fields are flat.
		field := strings.TrimPrefix(typ.Field, "rulesInput.")
		if field == "" {
			return badRequest("request body must be a JSON object")
		}
		return invalidField(field, fmt.Sprintf("must be %s", jsonKind(typ.Type.Kind().String())))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalidField(field, "is not a known field")
	default:
		return badRequest("malformed JSON: " + err.Error())
	}
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "float32", "float64":
		return "a number"
	}
	if strings.HasPrefix(k, "int") || strings.HasPrefix(k, "uint") {
		return "an integer"
	}
	return "of another type"
}

// parseID reads a positive integer id strictly: ASCII digits only, so
// "12abc", "+12", " 12" and "1e3" are not 12.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// textProblem says why a string cannot be stored as PostgreSQL text, or ""
// when it can: text refuses NUL and bytes that are not UTF-8.
func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain a NUL character (\\u0000)"
	}
	return ""
}

// checkText walks a decoded request (structs by their JSON names, maps,
// slices, pointers) and reports the first string PostgreSQL would refuse,
// naming its top-level field. Raw JSON (json.RawMessage) is the caller's
// to check: it is bytes, not text.
func checkText(v any) error {
	field, msg := textIn(reflect.ValueOf(v), "")
	if msg != "" {
		return invalidField(field, msg)
	}
	return nil
}

func textIn(v reflect.Value, field string) (string, string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", ""
		}
		return textIn(v.Elem(), field)
	case reflect.String:
		return field, textProblem(v.String())
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name := sf.Name
			if tag, _, _ := strings.Cut(sf.Tag.Get("json"), ","); tag == "-" {
				continue
			} else if tag != "" {
				name = tag
			}
			if field != "" {
				name = field + "." + name
			}
			if f, msg := textIn(v.Field(i), name); msg != "" {
				return f, msg
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", "" // raw bytes (json.RawMessage)
		}
		for i := 0; i < v.Len(); i++ {
			if f, msg := textIn(v.Index(i), field); msg != "" {
				return f, msg
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if f, msg := textIn(iter.Key(), field); msg != "" {
				return f, msg
			}
			if f, msg := textIn(iter.Value(), field); msg != "" {
				return f, msg
			}
		}
	}
	return "", ""
}

// payloadProblem says why a syntactically valid JSON document cannot be an
// event payload, or "" when it can. PostgreSQL stores only UTF-8 text, and
// its JSON operators (->> in the dead-letter payout sum, jsonb) refuse the
// escape \u0000 and UTF-16 surrogate escapes that do not pair up; numbers
// must be finite doubles (what receivers' parsers and the payout sum use)
// and fit PostgreSQL's numeric.
func payloadProblem(raw []byte) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		if !inString {
			switch {
			case ch == '"':
				inString = true
			case ch == '-' || (ch >= '0' && ch <= '9'):
				end := i
				for end < len(raw) && strings.IndexByte("+-.0123456789eE", raw[end]) >= 0 {
					end++
				}
				if msg := numericProblem(string(raw[i:end])); msg != "" {
					return msg
				}
				i = end - 1
			}
			continue
		}
		switch ch {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(raw) {
				return ""
			}
			i++
			if raw[i] != 'u' {
				continue
			}
			r, ok := hex4(raw, i+1)
			if !ok {
				continue
			}
			i += 4
			switch {
			case r == 0:
				return "must not contain the escape \\u0000 (PostgreSQL cannot store it)"
			case r >= 0xDC00 && r <= 0xDFFF:
				return "contains a lone UTF-16 surrogate escape (\\u" + string(raw[i-3:i+1]) + ")"
			case r >= 0xD800 && r <= 0xDBFF:
				low, ok := rune(0), false
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					low, ok = hex4(raw, i+3)
				}
				if !ok || low < 0xDC00 || low > 0xDFFF {
					return "contains a lone UTF-16 surrogate escape (\\u" + string(raw[i-3:i+1]) + ")"
				}
				i += 6
			}
		}
	}
	return ""
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}

// PostgreSQL's numeric holds up to 131072 digits before the decimal point
// and 16383 after it.
const (
	numericMaxWeight = 131071
	numericMaxScale  = 16383
)

// numericProblem says why a JSON number literal cannot be stored and read
// back as a number, or "" when it can: it must be a finite double and fit
// PostgreSQL's numeric.
func numericProblem(lit string) string {
	if f, err := strconv.ParseFloat(lit, 64); err != nil && (math.IsInf(f, 0) || !errors.Is(err, strconv.ErrRange)) {
		return "contains a number beyond the range of a double (" + shorten(lit) + ")"
	}
	mant, expPart, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	exp := int64(0)
	if expPart != "" {
		e, err := strconv.ParseInt(expPart, 10, 64)
		if err != nil || e > 1<<30 || e < -(1<<30) {
			return "contains a number too large or too precise to store (" + shorten(lit) + ")"
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	scale := int64(len(frac)) - exp
	weight := int64(math.MinInt32)
	if t := strings.TrimLeft(intPart, "0"); t != "" {
		weight = int64(len(t)) - 1 + exp
	} else if i := strings.IndexFunc(frac, func(r rune) bool { return r != '0' }); i >= 0 {
		weight = -int64(i) - 1 + exp
	}
	if scale > numericMaxScale || weight > numericMaxWeight {
		return "contains a number too large or too precise to store (" + shorten(lit) + ")"
	}
	return ""
}

func shorten(s string) string {
	if len(s) > 24 {
		return s[:20] + "..."
	}
	return s
}
