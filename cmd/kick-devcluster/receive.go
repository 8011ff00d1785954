package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// receive runs a CloudEvents receiver (the sdk-go client) that prints every
// event it gets, for the demo: `kick-devcluster receive --port 18090`.
func receive(args []string) int {
	fs := flag.NewFlagSet("receive", flag.ContinueOnError)
	port := fs.Int("port", 18090, "port to listen on (127.0.0.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "receive:", err)
		return 1
	}
	p, err := cloudevents.NewHTTP(cloudevents.WithListener(l))
	if err != nil {
		fmt.Fprintln(os.Stderr, "receive:", err)
		return 1
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "receive:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Printf("receiving CloudEvents on http://127.0.0.1:%d/\n", *port)
	err = c.StartReceiver(ctx, func(ev cloudevents.Event) {
		fmt.Printf("CloudEvent %s  subject=%s  id=%s\n  data: %s\n", ev.Type(), ev.Subject(), ev.ID(), ev.Data())
	})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "receive:", err)
		return 1
	}
	return 0
}
