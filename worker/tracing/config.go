// Package tracing owns hookline's OpenTelemetry traces: whether they are
// on (the standard OTEL_* variables), the tracer provider and its OTLP
// exporter, the names of hookline's spans and attributes, and the trace
// context an event carries through the queue from its ingest request to
// every attempt, whichever process makes it.
//
// Traces are off unless the environment asks for them, and off costs
// nothing: the web server and the worker hold a nil *Tracer and skip every
// span behind one nil check, and events store no trace context.
package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocols an OTLP exporter speaks (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is what the OTEL_* variables ask of hookline's traces.
type Config struct {
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	// Endpoint is where spans are sent: for HTTP the full URL of the
	// traces path, for gRPC the collector's URL (http:// without TLS).
	Endpoint string
	// Sampler decides which traces are recorded; SamplerName is how the
	// environment named it (for the start-up log).
	Sampler     sdktrace.Sampler
	SamplerName string
	// ServiceName is the service.name resource attribute.
	ServiceName string
}

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// service.name in OTEL_RESOURCE_ATTRIBUTES) names another.
const DefaultServiceName = "hookline"

// FromEnv reads the standard OpenTelemetry variables. It returns nil
// (traces off) unless they ask for traces, the way the specification's
// variables do for a service that exports nothing by default:
//
//   - OTEL_SDK_DISABLED=true turns everything off;
//   - OTEL_TRACES_EXPORTER=none turns traces off, =otlp turns them on (to
//     the default endpoint unless one is set); no other exporter exists
//     here;
//   - unset, traces are on exactly when an OTLP endpoint is set:
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT.
//
// Each problem is an error naming its variable.
func FromEnv(getenv func(string) string) (*Config, []error) {
	env := func(name string) string { return strings.TrimSpace(getenv(name)) }
	var errs []error
	if v := strings.ToLower(env("OTEL_SDK_DISABLED")); v != "" {
		disabled, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("OTEL_SDK_DISABLED: want true or false (got %q)", v))
		} else if disabled {
			return nil, nil
		}
	}
	exporterSet := false
	if v := strings.ToLower(env("OTEL_TRACES_EXPORTER")); v != "" {
		for name := range strings.SplitSeq(v, ",") {
			switch strings.TrimSpace(name) {
			case "none":
				return nil, errs
			case "otlp":
				exporterSet = true
			default:
				errs = append(errs, fmt.Errorf("OTEL_TRACES_EXPORTER: hookline exports otlp or none (got %q)", name))
			}
		}
	}
	tracesEndpoint, baseEndpoint := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), env("OTEL_EXPORTER_OTLP_ENDPOINT")
	if !exporterSet && tracesEndpoint == "" && baseEndpoint == "" {
		return nil, errs
	}
	c := &Config{Protocol: ProtocolHTTP, ServiceName: serviceName(getenv)}
	protoVar := "OTEL_EXPORTER_OTLP_PROTOCOL"
	if env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") != "" {
		protoVar = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	}
	switch p := strings.ToLower(env(protoVar)); p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		c.Protocol = ProtocolGRPC
	default:
		errs = append(errs, fmt.Errorf("%s: want http/protobuf or grpc (got %q)", protoVar, p))
	}
	var err error
	if c.Endpoint, err = endpointURL(c.Protocol, tracesEndpoint, baseEndpoint); err != nil {
		errs = append(errs, err)
	}
	if c.Sampler, c.SamplerName, err = sampler(env("OTEL_TRACES_SAMPLER"), env("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// endpointURL is where the exporter sends, by the specification's rules: a
// traces endpoint is used as it is; the base endpoint gets /v1/traces
// appended for HTTP (gRPC has no path); the defaults are the collector's
// ports on localhost, without TLS.
func endpointURL(protocol, traces, base string) (string, error) {
	name, v := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces
	switch {
	case traces != "":
	case base != "":
		name, v = "OTEL_EXPORTER_OTLP_ENDPOINT", base
		if protocol == ProtocolHTTP {
			v = strings.TrimRight(base, "/") + "/v1/traces"
		}
	case protocol == ProtocolGRPC:
		return "http://localhost:4317", nil
	default:
		return "http://localhost:4318/v1/traces", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: want a URL such as http://collector:4318 (got %q)", name, v)
	}
	return v, nil
}

// sampler is OTEL_TRACES_SAMPLER with its argument, as the specification
// names them; parentbased_always_on when unset. A ratio is a probability
// from 0 to 1 (1 when no argument is given).
func sampler(name, arg string) (sdktrace.Sampler, string, error) {
	name = strings.ToLower(name)
	if name == "" {
		name = "parentbased_always_on"
	}
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") && arg != "" {
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return nil, "", fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: want a probability from 0 to 1 (got %q)", arg)
		}
		ratio = v
	}
	label := name
	if strings.HasSuffix(name, "traceidratio") {
		label += " " + strconv.FormatFloat(ratio, 'g', -1, 64)
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample(), label, nil
	case "always_off":
		return sdktrace.NeverSample(), label, nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), label, nil
	case "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), label, nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), label, nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), label, nil
	}
	return nil, "", errors.New("OTEL_TRACES_SAMPLER: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio (got " + strconv.Quote(name) + ")")
}

// serviceName is OTEL_SERVICE_NAME, else service.name in
// OTEL_RESOURCE_ATTRIBUTES, else DefaultServiceName.
func serviceName(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		return v
	}
	for pair := range strings.SplitSeq(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		if k, v, ok := strings.Cut(pair, "="); ok && strings.TrimSpace(k) == "service.name" {
			if v, err := url.PathUnescape(strings.TrimSpace(v)); err == nil && v != "" {
				return v
			}
		}
	}
	return DefaultServiceName
}
