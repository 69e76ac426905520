package web

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// A request its client abandoned is not an internal error: it is answered
// 499 (for the access log) and logged at debug, while the same error on a
// live request still counts as internal.
func TestClassifyClientCancelled(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	e := echo.New()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodGet, "/events", nil).WithContext(ctx)
	c := e.NewContext(req, httptest.NewRecorder())
	ae := s.classify(fmt.Errorf("list events: %w", context.Canceled), c)
	if ae.Status != 499 || ae.Code != "client_closed" {
		t.Fatalf("cancelled request classified %d %s, want 499 client_closed", ae.Status, ae.Code)
	}
	if strings.Contains(logs.String(), "internal error") {
		t.Fatalf("cancelled request logged as an internal error: %s", logs.String())
	}

	live := e.NewContext(httptest.NewRequest(http.MethodGet, "/events", nil), httptest.NewRecorder())
	if ae := s.classify(fmt.Errorf("list events: %w", context.Canceled), live); ae.Status != http.StatusInternalServerError {
		t.Fatalf("a cancellation not from the client classified %d, want 500", ae.Status)
	}
}
