package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookline/hookline/db"
	"github.com/hookline/hookline/views/components"
	"github.com/hookline/hookline/views/endpoints"
	"github.com/hookline/hookline/views/layout"
	"github.com/hookline/hookline/web/account"
)

// endpointsPage: GET /endpoints
func (s *Server) endpointsPage(c echo.Context) error {
	t, err := s.endpointsTable(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoints.Page(s.meta(c, "Endpoints", layout.NavEndpoints), t))
}

// endpointsTableFragment: GET /endpoints/table (htmx live refresh and filter)
func (s *Server) endpointsTableFragment(c echo.Context) error {
	t, err := s.endpointsTable(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, endpoints.TableFragment(t))
}

func filterOf(c echo.Context) endpoints.Filter {
	f := endpoints.Filter{Q: strings.TrimSpace(c.QueryParam("q")), Show: c.QueryParam("show"), Sort: c.QueryParam("sort")}
	if n, err := strconv.Atoi(c.QueryParam("page")); err == nil && n > 1 {
		f.Page = n
	}
	switch f.Show {
	case "", "slow", "open", "disabled":
	default:
		f.Show = ""
	}
	switch f.Sort {
	case "name", "p95", "failures", "dead", "queue":
	default:
		f.Sort = "name"
	}
	return f
}

// endpointsTable builds the table in three queries whatever the number of
// endpoints: configuration with cached health (sparklines included), queue
// depths and dead-letter counts. Filtering and sorting happen here.
func (s *Server) endpointsTable(c echo.Context) (endpoints.Table, error) {
	ctx := c.Request().Context()
	f := filterOf(c)
	rows, queues, dead, err := s.endpointData(ctx)
	if err != nil {
		return endpoints.Table{}, err
	}
	now := s.now()
	unsent, err := s.unsentDead(ctx, now.Add(-24*time.Hour), now.Add(-24*time.Hour), nil)
	if err != nil {
		return endpoints.Table{}, err
	}
	t := endpoints.Table{Filter: f, Total: len(rows), Now: now, CanOperate: principalOf(c).can(account.RoleOperator)}
	q := strings.ToLower(f.Q)
	for _, r := range rows {
		row := endpointRow(r, queues[r.Endpoint.ID], dead[r.Endpoint.ID], unsent[r.Endpoint.ID].Dead, now)
		if q != "" && !strings.Contains(strings.ToLower(row.Name), q) && !strings.Contains(strings.ToLower(row.Partner), q) && !strings.Contains(strings.ToLower(row.Host), q) {
			continue
		}
		switch f.Show {
		case "slow":
			if row.Latency != "slow" && row.Latency != "critical" {
				continue
			}
		case "open":
			if row.Breaker.State == "closed" && !row.Breaker.Paused {
				continue
			}
		case "disabled":
			if row.Breaker.Enabled {
				continue
			}
		}
		t.Rows = append(t.Rows, row)
	}
	sortRows(t.Rows, f.Sort)
	// Only the page's rows are shown, so only they get their sparklines:
	// reading and folding a thousand endpoints' series costs more than the
	// page.
	t.Matched = len(t.Rows)
	if t.Filter.Page > t.Pages() {
		t.Filter.Page = t.Pages()
	}
	from := t.First() - 1
	t.Rows = t.Rows[from:min(from+endpoints.PageSize, len(t.Rows))]
	if err := s.withSparklinesOf(ctx, t.Rows); err != nil {
		return endpoints.Table{}, err
	}
	return t, nil
}

func (s *Server) endpointData(ctx context.Context) ([]db.EndpointListWithHealthRow, map[int64]int64, map[int64]int64, error) {
	rows, err := s.q.EndpointListWithHealth(ctx, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list endpoints: %w", err)
	}
	qd, err := s.q.EndpointQueueDepths(ctx, components.Counted+1)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("queue depths: %w", err)
	}
	dd, err := s.q.EndpointDeadCounts(ctx, db.EndpointDeadCountsParams{CountCap: components.Counted + 1})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dead-letter counts: %w", err)
	}
	queues := make(map[int64]int64, len(qd))
	for _, r := range qd {
		queues[r.EndpointID] = r.Queued
	}
	dead := make(map[int64]int64, len(dd))
	for _, r := range dd {
		dead[r.EndpointID] = r.Dead
	}
	return rows, queues, dead, nil
}

func sortRows(rows []endpoints.Row, by string) {
	val := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	slices.SortStableFunc(rows, func(a, b endpoints.Row) int {
		switch by {
		case "p95":
			return cmp.Compare(max(val(b.P95), val(b.RecentP95)), max(val(a.P95), val(a.RecentP95)))
		case "failures":
			if c := cmp.Compare(b.Failures, a.Failures); c != 0 {
				return c
			}
			return cmp.Compare(successOr(a.SuccessRate), successOr(b.SuccessRate))
		case "dead":
			return cmp.Compare(b.Dead, a.Dead)
		case "queue":
			return cmp.Compare(b.Queue, a.Queue)
		}
		return cmp.Or(cmp.Compare(strings.ToLower(a.Partner), strings.ToLower(b.Partner)), cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)))
	})
}

func successOr(p *float64) float64 {
	if p == nil {
		return 2
	}
	return *p
}
