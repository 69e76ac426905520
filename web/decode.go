package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

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
	return nil
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
		field := typ.Field
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
