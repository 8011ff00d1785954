package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kick-operator/kick/restart/tracing"
)

// startTracing exports restart-cycle traces over OTLP/gRPC when
// --otel-otlp-endpoint is set. Without it no exporter runs and the returned
// Tracer is nil, which records nothing. Spans are batched; the exporter is
// flushed when ctx ends (the manager stops).
func startTracing(ctx context.Context, opts options) (*tracing.Tracer, error) {
	if opts.otlpEndpoint == "" {
		return nil, nil
	}
	exportOpts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(opts.otlpEndpoint)}
	if opts.otlpInsecure {
		exportOpts = append(exportOpts, otlptracegrpc.WithInsecure())
	}
	log := ctrl.Log.WithName("tracing")
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Error(err, "OpenTelemetry") }))
	// The connection is made lazily: an unreachable collector delays no start.
	exporter, err := otlptracegrpc.New(ctx, exportOpts...)
	if err != nil {
		return nil, fmt.Errorf("--otel-otlp-endpoint: %w", err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "kick-manager"),
		attribute.String("service.version", version),
		attribute.String("service.namespace", opts.namespace),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
	)
	go func() {
		<-ctx.Done()
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(flush); err != nil {
			log.Error(err, "flush the last spans")
		}
	}()
	return tracing.New(tp), nil
}
