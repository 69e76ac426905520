package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/hookline/hookline/static"
	"github.com/hookline/hookline/web/account"
	"github.com/hookline/hookline/web/sso"
)

// routes is hookline's one route table. Each group says who may call it.
// One line a route, permission last, so its runs of lines alike in shape are on purpose.
func (s *Server) routes() {
	e := s.e
	// The edge (security headers, body limits, deadlines) comes before
	// routing; forms are parsed only by the groups and routes that take
	// them, after their session check.
	e.Pre(s.edge)
	e.Use(middleware.RequestID())
	e.Use(s.recoverPanics)
	e.Use(s.traceIngest) // outside logRequests, which answers errors: the span sees the status
	e.Use(s.logRequests)
	e.Use(s.rejectUnstorableQuery)

	// Probes: no authentication, no session.
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/api/openapi.json", s.openAPI)
	// Metrics name endpoints and their breakers: only with the metrics
	// token here; anonymous scrapes go to HOOKLINE_METRICS_ADDR.
	e.GET("/metrics", s.metricsOnPublic())

	// JSON API: Authorization: Bearer <api key>. Each route names the
	// scopes of key it takes (api_scope.go); admin takes every route. A key
	// bound to a partner is refused by keyScope and let through by
	// partnerKeyScope, whose handlers keep to that partner's events.
	api := e.Group("/api/v1", s.requireAPIKey)
	api.POST("/events", s.apiEventCreate, partnerKeyScope(account.ScopeIngest))
	api.POST("/events/batch", s.apiEventBatch, partnerKeyScope(account.ScopeIngest))
	api.GET("/events/:id", s.apiEventGet, partnerKeyScope(account.ScopeIngest, account.ScopeRead)) // ingest: the key's own events
	api.GET("/events", s.apiEventList, partnerKeyScope(account.ScopeRead))
	api.POST("/partners", s.apiPartnerCreate, keyScope(account.ScopeAdmin))
	api.GET("/partners", s.apiPartnerList, keyScope(account.ScopeRead))
	api.GET("/partners/:id", s.apiPartnerGet, keyScope(account.ScopeRead))
	api.PATCH("/partners/:id", s.apiPartnerPatch, keyScope(account.ScopeAdmin))
	api.POST("/endpoints", s.apiEndpointCreate, keyScope(account.ScopeAdmin))
	api.GET("/endpoints", s.apiEndpointList, keyScope(account.ScopeRead))
	api.GET("/endpoints/:id", s.apiEndpointGet, keyScope(account.ScopeRead))
	api.PATCH("/endpoints/:id", s.apiEndpointPatch, keyScope(account.ScopeAdmin))
	api.POST("/endpoints/:id/secrets/rotate", s.apiRotateSecret, keyScope(account.ScopeAdmin))
	api.POST("/endpoints/:id/pause", s.apiBreaker(actionPause), keyScope(account.ScopeAdmin))
	api.POST("/endpoints/:id/resume", s.apiBreaker(actionResume), keyScope(account.ScopeAdmin))
	api.POST("/endpoints/:id/force-close", s.apiBreaker(actionForceClose), keyScope(account.ScopeAdmin))
	api.GET("/endpoints/:id/attempts", s.apiEndpointAttempts, keyScope(account.ScopeRead))
	api.POST("/deliveries/:id/resend", s.apiDeliveryResend, keyScope(account.ScopeAdmin))
	api.POST("/deliveries/replay", s.apiBulkReplay, keyScope(account.ScopeAdmin))
	api.GET("/replays/:id", s.apiReplayJob, keyScope(account.ScopeRead))
	api.POST("/replays/:id/cancel", s.apiReplayJobCancel, keyScope(account.ScopeAdmin))
	api.GET("/stats", s.apiStats, keyScope(account.ScopeRead))
	api.GET("/audit", s.apiAuditList, keyScope(account.ScopeRead))
	// Conversions: a key bound to a partner reads that partner's only.
	api.GET("/conversions", s.apiConversionList, partnerKeyScope(account.ScopeRead))
	api.GET("/conversions/history", s.apiConversionHistory, partnerKeyScope(account.ScopeRead))
	api.GET("/dead-letters/clusters", s.apiDeadLetterClusters, keyScope(account.ScopeRead))
	api.POST("/dead-letters/replay", s.apiReplay, keyScope(account.ScopeAdmin))
	api.POST("/partners/:id/portal-links", s.apiPortalLinkCreate, keyScope(account.ScopeAdmin))
	api.DELETE("/partners/:id/portal-sessions", s.apiPortalSessionsRevoke, keyScope(account.ScopeAdmin))
	// A partner's own notification contacts and the operator's opt-in:
	// admin only, as the channels (a contact URL may carry a token).
	api.GET("/partners/:id/notification-contacts", s.apiPartnerContactsGet, keyScope(account.ScopeAdmin))
	api.PATCH("/partners/:id/notification-contacts", s.apiPartnerContactsPatch, keyScope(account.ScopeAdmin))
	// Operator notification channels: admin only, reads included, as on
	// the dashboard (a chat channel's URL is its credential).
	api.POST("/notification-channels", s.apiChannelCreate, keyScope(account.ScopeAdmin))
	api.GET("/notification-channels", s.apiChannelList, keyScope(account.ScopeAdmin))
	api.DELETE("/notification-channels/:id", s.apiChannelDelete, keyScope(account.ScopeAdmin))
	api.POST("/notification-channels/:id/test", s.apiChannelTest, keyScope(account.ScopeAdmin))

	// Unknown API paths answer in JSON, not with a dashboard page.
	api.Any("/*", func(c echo.Context) error {
		return &apiError{http.StatusNotFound, "not_found", "no such API route", ""}
	})

	// Static assets, content-hashed and cached.
	e.GET("/static/*", echo.WrapHandler(static.Handler()))

	// Sign in and out. The login form has its own double-submit CSRF token;
	// single sign-on (OpenID Connect) binds its callback to the attempt's
	// state cookie, and may turn password sign-in off.
	e.GET("/login", s.loginPage)
	e.POST("/login", s.loginSubmit, s.requirePasswordLogin, s.parseForm)
	e.GET("/login/oidc", s.oidcStart)
	e.GET(sso.CallbackPath, s.oidcCallback)
	// A user with two-factor sign-in on gives a code next (dash_login_code.go).
	e.GET(loginCodePath, s.loginCodePage)
	e.POST(loginCodePath, s.loginCodeSubmit, s.parseForm)

	// Partner portal: a single-use link signs one partner in, with a cookie
	// of its own (path /portal) that no dashboard route reads; every page
	// and action reads through the session's partner id, and every state
	// change needs the portal session's CSRF token. Opening a link only
	// shows a page whose form posts it: the POST uses it, so a link
	// previewer's GET does not.
	e.GET("/portal/signin", s.portalSignInPage)
	e.GET("/portal/links/:token", s.portalSignInPage)
	e.POST("/portal/signin", s.portalSignIn, s.parseForm)
	pt := e.Group(portalPath, middleware.GzipWithConfig(middleware.GzipConfig{Level: 1, MinLength: 8 << 10}), s.requirePortal, s.parseForm, s.requirePortalCSRF)
	pt.GET("", s.portalHome)
	pt.GET("/", s.portalHome)
	pt.POST("/signout", s.portalSignOut)
	pt.GET("/endpoints/:id", s.portalEndpointPage)
	pt.POST("/endpoints/:id/pause", s.portalBreaker(actionPause))
	pt.POST("/endpoints/:id/resume", s.portalBreaker(actionResume))
	pt.POST("/endpoints/:id/test", s.portalTestFire)
	pt.POST("/endpoints/:id/rotate", s.portalRotate)
	pt.POST("/endpoints/:id/secrets/:secret/expire", s.portalSecretExpire)
	pt.POST("/endpoints/:id/replay", s.portalReplay)
	pt.GET("/endpoints/:id/edit", s.portalEditPage)
	pt.POST("/endpoints/:id/edit", s.portalEditSave)
	pt.POST("/endpoints/:id/preview", s.portalPreview)
	pt.POST("/endpoints/:id/test-fire", s.portalFormTestFire)
	pt.GET("/notifications", s.portalContactsPage)
	pt.POST("/notifications", s.portalContactsSave)
	pt.GET("/events", s.portalEventsPage)
	pt.GET("/events/:id", s.portalEventPage)
	pt.POST("/deliveries/:id/resend", s.portalResend)
	pt.POST("/deliveries/:id/replay", s.portalReplayOne)
	pt.GET("/conversions", s.portalConversionsPage)
	pt.GET("/conversions/history", s.portalConversionHistoryPage)
	// Endpoint management: only for a partner its operator allows it.
	manage := s.requirePortalManage
	pt.GET("/endpoints/new", s.portalNewPage, manage)
	pt.POST("/endpoints", s.portalCreate, manage)
	pt.POST("/endpoints/preview", s.portalNewPreview, manage)
	pt.POST("/endpoints/:id/disable", s.portalSetEnabled(false), manage)
	pt.POST("/endpoints/:id/enable", s.portalSetEnabled(true), manage)
	pt.POST("/endpoints/:id/event-types", s.portalEventTypes, manage)

	// Dashboard: a session for everything, CSRF on every state change.
	// viewer reads; operator replays, rotates, pauses, edits; admin manages
	// users and API keys.
	// Pages compress well (the endpoints table is mostly repeated SVG
	// markup: 3.7 MB for 1,000 endpoints, ~10 times less gzipped); level 1
	// keeps the cost to a few milliseconds.
	// A user whose role needs two-factor sign-in (HOOKLINE_REQUIRE_2FA)
	// and has none reaches only /account and /logout (requireEnrolment).
	// With a read replica (reads.go), the routes marked replica read from
	// it, and every state change records where the primary was after it,
	// so that its author's next pages read it back (recordWrites).
	d := e.Group("", middleware.GzipWithConfig(middleware.GzipConfig{Level: 1, MinLength: 8 << 10}), s.requireSession, s.requireEnrolment, s.parseForm, s.requireCSRF, s.recordWrites)
	replica := s.replicaReads
	operator := requireRole(account.RoleOperator)
	d.POST("/logout", s.logout)

	// Your account: two-factor sign-in, for every role.
	d.GET("/account", s.accountPage)
	d.POST("/account/2fa/setup", s.totpSetup)
	d.POST("/account/2fa/enable", s.totpEnable)
	d.POST("/account/2fa/disable", s.totpDisable)
	d.POST("/account/2fa/recovery-codes", s.totpRecoveryCodes)

	// Overview and endpoints.
	d.GET("/", s.overviewPage, replica)
	d.GET("/overview/live", s.overviewLiveFragment, replica)
	d.GET("/endpoints", s.endpointsPage, replica)
	d.GET("/endpoints/table", s.endpointsTableFragment, replica)
	d.GET("/endpoints/:id", s.endpointPage, replica)
	d.GET("/endpoints/:id/health", s.endpointHealthFragment, replica)
	d.POST("/endpoints/:id/pause", s.endpointBreaker(actionPause), operator)
	d.POST("/endpoints/:id/resume", s.endpointBreaker(actionResume), operator)
	d.POST("/endpoints/:id/force-close", s.endpointBreaker(actionForceClose), operator)
	d.POST("/endpoints/:id/enable", s.endpointEnable, operator)
	d.POST("/endpoints/:id/test", s.endpointTestFire, operator)
	d.POST("/endpoints/:id/rotate", s.endpointRotate, operator)
	d.GET("/endpoints/:id/egress", s.endpointEgressPage, operator)
	d.POST("/endpoints/:id/egress", s.endpointEgressSave, operator)

	// Event log: every event, its deliveries and attempts; resend.
	d.GET("/events", s.eventsPage, replica)
	d.GET("/events/new", s.eventsNew, replica)
	d.GET("/events/:id", s.eventPageView, replica)
	d.POST("/deliveries/:id/resend", s.deliveryResendForm, operator)
	d.GET("/deliveries/replay", s.bulkReplayPage)
	d.POST("/deliveries/replay", s.bulkReplayStart, operator)
	d.GET("/replays/:id", s.replayJobPage)
	d.POST("/replays/:id/cancel", s.replayJobCancel, operator)

	// Conversions of endpoints that fire on a status change.
	d.GET("/conversions", s.conversionsPage)
	d.GET("/conversions/history", s.conversionHistoryPage)

	// Dead letters.
	d.GET("/dead-letters", s.deadLettersPage)
	d.GET("/dead-letters/cluster", s.deadLetterCluster)
	d.GET("/dead-letters/count", s.deadLetterCount)
	d.GET("/dead-letters/progress", s.replayProgress)
	d.POST("/dead-letters/replay", s.deadLetterReplay, operator)

	// Partners and onboarding: forms for partners and endpoints, tracker
	// presets, live preview, test fire.
	d.GET("/partners", s.partnersPage)
	d.GET("/partners/new", s.partnerNew, operator)
	d.POST("/partners", s.partnerSave, operator)
	d.GET("/partners/:id", s.partnerPage)
	d.GET("/partners/:id/edit", s.partnerEdit, operator)
	d.POST("/partners/:id", s.partnerSave, operator)
	d.POST("/partners/:id/archive", s.partnerArchive, operator)
	d.POST("/partners/:id/portal-links", s.partnerPortalLink, operator)
	d.POST("/partners/:id/notification-contacts", s.partnerContactsToggle, operator)
	d.POST("/partners/:id/portal-links/:lid/revoke", s.partnerPortalRevokeLink, operator)
	d.POST("/partners/:id/portal-sessions/revoke", s.partnerPortalRevokeAll, operator)
	d.POST("/partners/:id/portal-sessions/:sid/revoke", s.partnerPortalRevokeSession, operator)
	d.POST("/partners/:id/portal-manage", s.partnerPortalManage, operator)
	d.GET("/partners/:id/endpoints/new", s.endpointNew, operator)
	d.POST("/partners/:id/endpoints", s.endpointCreate, operator)
	d.GET("/endpoints/:id/edit", s.endpointEditPage, operator)
	d.POST("/endpoints/:id/edit", s.endpointUpdate, operator)
	d.POST("/endpoints/preview", s.endpointPreview, operator)
	d.POST("/endpoints/filter-preview", s.endpointFilterPreview, operator)
	d.GET("/endpoints/retry-window", s.retryWindowFragment)
	d.POST("/endpoints/test-fire", s.formTestFire, operator)

	// Audit: the log and its CSV export, with the same filters.
	d.GET("/audit", s.auditPage, replica)
	d.GET("/audit/export.csv", s.auditExport, replica)

	// Settings: admins only.
	admin := requireRole(account.RoleAdmin)
	d.GET("/settings/api-keys", s.apiKeysPage, admin)
	d.POST("/settings/api-keys", s.apiKeyCreate, admin)
	d.POST("/settings/api-keys/:id/revoke", s.apiKeyRevoke, admin)
	d.GET("/settings/users", s.usersPage, admin)
	d.POST("/settings/users", s.userAdd, admin)
	d.POST("/settings/users/:id/role", s.userSetRole, admin)
	d.POST("/settings/users/:id/disable", s.userSetDisabled, admin)
	d.POST("/settings/users/:id/2fa/reset", s.userTwoFactorReset, admin)
	d.GET("/settings/notifications", s.notificationsPage, admin)
	d.POST("/settings/notifications", s.notificationChannelAdd, admin)
	d.POST("/settings/notifications/:id/delete", s.notificationChannelDelete, admin)
	d.POST("/settings/notifications/:id/test", s.notificationChannelTest, admin)
}
