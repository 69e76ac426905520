package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// Sink serves the drain's loopback receiver (the same answer, after the
// same delay) on addr until ctx ends: the receiver of the deployed
// topology, in a process of its own. It prints the URL it serves on first
// and, once stopped, the requests it received.
func Sink(ctx context.Context, addr string, delay time.Duration, out io.Writer) error {
	if err := LoopbackAddr(addr); err != nil {
		return err
	}
	rcv, err := listenReceiver(addr, delay)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "%s%s\n", sinkListening, rcv.url); err != nil {
		rcv.close()
		return err
	}
	<-ctx.Done()
	rcv.close()
	_, err = fmt.Fprintf(out, "sink received %d requests\n", rcv.count.Load())
	return err
}

// sinkListening starts the first line Sink prints.
const sinkListening = "sink listening on "

// LoopbackAddr accepts a host:port whose host is a loopback IP address
// (127.0.0.1:0 picks a free port): the bench's receiver serves nothing
// beyond this machine.
func LoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want a loopback address such as 127.0.0.1:0", addr)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: want a loopback address such as 127.0.0.1:0", addr)
	}
	return nil
}
